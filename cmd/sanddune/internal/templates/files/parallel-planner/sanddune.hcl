# Written by `sanddune init --template parallel-planner`: a planner picks the
# issues that can be worked on independently, one agent per issue implements it
# on its own branch, all at once, and a last run merges the branches.
#
#   sanddune validate     check this file (sanddune graph shows the pipeline)
#   sanddune run planner  run it: the branches are merged into your current branch

sandbox "{{SANDBOX}}" "default" {
  image = "{{IMAGE_NAME}}" # sanddune {{SANDBOX}} build-image
}

agent "{{AGENT}}" "default" {
  model = "{{MODEL}}"
}

run "plan" {
  sandbox         = sandbox.{{SANDBOX}}.default
  agent           = agent.{{AGENT}}.default
  prompt_file     = "plan-prompt.md"
  branch_strategy = { type = "merge-to-head" } # the planner commits nothing
  max_iterations  = 1
  output {
    tag    = "plan"
    schema = file("plan.schema.json")
  }
}

run "implement" {
  for_each        = run.plan.output.issues
  sandbox         = sandbox.{{SANDBOX}}.default
  agent           = agent.{{AGENT}}.default
  prompt_file     = "implement-prompt.md"
  prompt_args     = { ISSUE_ID = each.value.id, ISSUE_TITLE = each.value.title }
  branch_strategy = { type = "branch", branch = each.value.branch }
  max_iterations  = 20
}

run "merge" {
  sandbox         = sandbox.{{SANDBOX}}.default
  agent           = agent.{{AGENT}}.default
  prompt_file     = "merge-prompt.md"
  branch_strategy = { type = "merge-to-head" }
  merge_branches  = [for r in run.implement : r.branch]
  max_iterations  = 1
}

pipeline "planner" {
  runs         = [run.plan, run.implement, run.merge]
  max_parallel = 4
}
