package bubblewrap

import (
	"testing"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// TestUnprivileged runs the conformance kit and the egress tests again as
// an ordinary user, the way most people run bubblewrap: unprivileged bwrap
// nests user namespaces, so namespaces, file ownership and egress
// enforcement all take another path than as root (kittest.RunAsUser).
func TestUnprivileged(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	kittest.RunAsUser(t, "^(TestConformance|TestEgressPolicyEnforced|TestEgressKeepsTheUser)$")
}
