// Package suggest finds the did-you-mean of a misspelt name.
package suggest

import "github.com/agext/levenshtein"

// Closest returns the option closest to given, or "" when none is close.
func Closest(given string, options []string) string {
	best, bestDist := "", 3
	for _, o := range options {
		if dist := levenshtein.Distance(given, o, nil); dist < bestDist {
			best, bestDist = o, dist
		}
	}
	return best
}
