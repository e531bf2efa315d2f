#!/usr/bin/env bash
# doc/scale.md's model on the measurements committed beside it
# (doc/scale-data.csv): scripts/scale-model.py check refits every parameter,
# predicts the held-out runs within the tolerances doc/scale.md states, and
# prints the tables at 8..4096 ranks; the plot it writes is well-formed SVG
# with one point per compared row. About 3 s. Prints TAP. Run by make check;
# by hand, from the source tree: tests/tools/test_scale_model.sh
set -u
top=${srcdir:-$(dirname "$0")/../..}
py=/usr/bin/python3

if [ ! -x "$py" ] || ! "$py" -c 'import numpy' 2>/dev/null; then
    echo "1..0 # SKIP $py with numpy (Debian's python3-numpy) is not installed"
    exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

echo "1..4"
n=0
failed=0
result() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failed=1
    fi
}

"$py" "$top/scripts/scale-model.py" check --csv "$top/doc/scale-data.csv" \
    --svg "$tmp/fit.svg" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/out" | tail -n 30
result $rc "check: the held-out predictions within doc/scale.md's tolerances"

ok=0
for want in '## (a) Bootstrap' '## (b) Endpoints and memory per rank' \
    '## (c) Allreduce' '## (d) Checkpoint write and restore' \
    '## (e) Stop path' '| 4096 / 512 |' 'Recommended checkpoint interval'; do
    grep -qF -- "$want" "$tmp/out" || { echo "# missing: $want"; ok=1; }
done
result $ok "the report has every part and the 4096-rank rows"

# Every endpoint count the model gives matches the measured one.
! grep -E '^\| (mpirun|srun) -N[0-9]+ -n[0-9]+ \| [0-9]+ \| [0-9]+ \| [+-]' "$tmp/out" >"$tmp/bad"
ok=$?
[ $ok -eq 0 ] || sed 's/^/# /' "$tmp/bad"
result $ok "endpoints per rank: the model's count is the measured one"

"$py" - "$tmp/fit.svg" <<'EOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
dots = root.findall(".//{http://www.w3.org/2000/svg}circle")
sys.exit(0 if root.tag.endswith("svg") and len(dots) > 100 else 1)
EOF
result $? "the plot is SVG with a point per compared row"
exit $failed
