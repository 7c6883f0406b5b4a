# Written by `sanddune init --template simple-loop`: the agent picks the next
# issue from the backlog, implements it, commits and closes it; each iteration
# takes one issue, until none is left or max_iterations is reached.
#
#   sanddune validate     check this file
#   sanddune run          run it: the commits are merged into your current branch

sandbox "{{SANDBOX}}" "default" {
  image = "{{IMAGE_NAME}}" # sanddune {{SANDBOX}} build-image
}

agent "{{AGENT}}" "default" {
  model = "{{MODEL}}"
}

run "worker" {
  sandbox         = sandbox.{{SANDBOX}}.default
  agent           = agent.{{AGENT}}.default
  prompt_file     = "prompt.md"
  branch_strategy = { type = "merge-to-head" }
  max_iterations  = 10

  # Install your project's dependencies once the sandbox is up, e.g.:
  # hooks {
  #   sandbox {
  #     on_sandbox_ready {
  #       command = "npm install"
  #       timeout = "5m"
  #     }
  #   }
  # }
}
