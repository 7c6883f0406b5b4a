package run

import "time"

// State is a run in progress as its sanddune process records it in
// .sanddune/runs (`sanddune status`): the run, its process, its phase and
// iteration, the tokens of its finished iterations, its branch and its
// log.
type State struct {
	Run           string    `json:"run"`
	PID           int       `json:"pid"`
	Host          string    `json:"host"`
	Started       time.Time `json:"started"`
	Phase         string    `json:"phase"`
	Iteration     int       `json:"iteration"`
	MaxIterations int       `json:"max_iterations"`
	// Tokens is what the finished iterations used (input, output, cache
	// reads and writes), 0 when the agent reported nothing.
	Tokens int64  `json:"tokens"`
	Branch string `json:"branch"`
	Log    string `json:"log"`
}
