package main

import (
	"fmt"
	"strconv"
)

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }

func itoa(i int) string { return strconv.Itoa(i) }
