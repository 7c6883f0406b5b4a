#!/usr/bin/env bash
# Runs every go test -fuzz target (func Fuzz* in a _test.go file, in any of
# the repo's modules) for FUZZTIME each (default 1m; `make fuzz`), one at a
# time with FUZZPARALLEL workers (default 1: the machine is shared). Plain
# `go test` (make test) already runs each target's seeds and the inputs in
# its testdata/fuzz/<Target>/. A failing input lands there: check it in
# with the fix, it stays a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-1m}"
parallel="${FUZZPARALLEL:-1}"

# module prints the directory of the go.mod that holds $1.
module() {
	local d=$1
	until [[ -f $d/go.mod ]]; do d=$(dirname "$d"); done
	echo "$d"
}

status=0
while IFS= read -r file; do
	dir=$(dirname "$file")
	mod=$(module "$dir")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		echo "== fuzz ${dir#./} $target ($fuzztime)"
		pkg=.
		[[ $dir == "$mod" ]] || pkg=./${dir#"$mod"/}
		(cd "$mod" && go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -parallel "$parallel" "$pkg") || status=1
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | sort)
exit $status
