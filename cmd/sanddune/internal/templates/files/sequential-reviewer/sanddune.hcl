# Written by `sanddune init --template sequential-reviewer`: in one sandbox,
# an agent implements the next issue from the backlog, then a second step
# reviews that work and refines it. Run it again for the next issue.
#
#   sanddune validate     check this file
#   sanddune run          run it: the commits are merged into your current branch

sandbox "{{SANDBOX}}" "default" {
  image = "{{IMAGE_NAME}}" # sanddune {{SANDBOX}} build-image
}

agent "{{AGENT}}" "default" {
  model = "{{MODEL}}"
}

session "implement-review" {
  sandbox         = sandbox.{{SANDBOX}}.default
  branch_strategy = { type = "merge-to-head" }

  # Install your project's dependencies once, for both steps, e.g.:
  # hooks {
  #   sandbox {
  #     on_sandbox_ready {
  #       command = "npm install"
  #     }
  #   }
  # }

  step "implement" {
    agent          = agent.{{AGENT}}.default
    prompt_file    = "implement-prompt.md"
    max_iterations = 5
  }

  step "review" {
    agent          = agent.{{AGENT}}.default
    prompt_file    = "review-prompt.md"
    max_iterations = 1
  }
}
