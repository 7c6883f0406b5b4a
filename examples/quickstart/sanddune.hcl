# sanddune quick start: no API key, no Docker.
#
# A scripted agent (the `command` agent) runs inside a bubblewrap sandbox on
# a worktree of this repository. It writes a file, commits it, and prints the
# completion signal. The commit lands on the branch sanddune/quickstart;
# your working tree is never touched.
#
#   sanddune run -c examples/quickstart/sanddune.hcl
#   git log --oneline -1 sanddune/quickstart

sandbox "bubblewrap" "default" {
  network = "none"
}

agent "command" "scripted" {
  # The prompt arrives on stdin, as it does for real agents.
  command = ["sh", "-c", <<-EOT
    mkdir -p .sanddune-quickstart
    cat > .sanddune-quickstart/NOTE.md
    git add .sanddune-quickstart/NOTE.md
    git -c user.name=sanddune-quickstart -c user.email=quickstart@sanddune.invalid \
      commit -q -m "quickstart: note from the scripted agent"
    echo "<promise>COMPLETE</promise>"
  EOT
  ]
}

run "quickstart" {
  prompt_file     = "prompt.md"
  prompt_args     = { GREETING = "Hello from sanddune" }
  branch_strategy = { type = "branch", branch = "sanddune/quickstart" }
  logging {
    type = "stdout"
  }
}
