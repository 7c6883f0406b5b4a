# Written by `sanddune init --template blank`: one run, a prompt for you to write.
#
#   sanddune validate     check this file
#   sanddune run          run it: the agent's commits are merged into your current branch

sandbox "{{SANDBOX}}" "default" {
  image = "{{IMAGE_NAME}}" # sanddune {{SANDBOX}} build-image
}

agent "{{AGENT}}" "default" {
  model = "{{MODEL}}"
}

run "main" {
  sandbox         = sandbox.{{SANDBOX}}.default
  agent           = agent.{{AGENT}}.default
  prompt_file     = "prompt.md"
  branch_strategy = { type = "merge-to-head" }
  max_iterations  = 1
}
