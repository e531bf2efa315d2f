#!/usr/bin/env bash
# No two files call each other, and no ring of them does: for every pair of objects under the given
# build folders, one may call the other, never both ways (a pair that does
# is one job in two files, or two jobs tangled: either way a change to one
# needs the other). Checked on what the objects define and leave
# undefined, so it sees every call, macros and inline helpers included.
# Prints TAP. Run by make check with the folders in RP_NO_PAIRS_DIRS; by
# hand: tests/tools/test_no_pairs.sh build/runtime/ckpt [DIR...]
set -u
if [ $# -eq 0 ]; then
    # shellcheck disable=SC2086 # a list of folders, split on purpose
    set -- ${RP_NO_PAIRS_DIRS:-}
fi
n=0
failed=0

# objects DIR: the compiled objects under DIR, one a line; libtool's PIC
# copies (.libs/) only where there is nothing else.
objects() {
    local found
    found=$(find "$1" -name '*.o' -not -path '*/.libs/*' 2>/dev/null | sort)
    [ -n "$found" ] ||
        found=$(find "$1" -path '*/.libs/*' -name '*.o' 2>/dev/null | sort)
    [ -z "$found" ] || echo "$found"
}

# symbols OBJ...: "OBJ D SYM" for every global defined, "OBJ U SYM" for
# every symbol used but not defined.
symbols() {
    local o
    for o in "$@"; do
        nm -g --defined-only "$o" 2>/dev/null | awk -v o="$o" 'NF >= 3 { print o, "D", $3 }'
        nm -u "$o" 2>/dev/null | awk -v o="$o" '{ print o, "U", $NF }'
    done
}

# calls OBJ...: "A B SYM" for every symbol SYM that object A uses and
# another object B defines.
calls() {
    symbols "$@" | awk '
        $2 == "D" { def[$3] = $1; next }
        { use[NR] = $1; sym[NR] = $3 }
        END {
            for (i in use) {
                d = def[sym[i]]
                if (d != "" && d != use[i]) print use[i], d, sym[i]
            }
        }'
}

# short: object paths as the file names they come from.
short() {
    sed -E 's#[^ ]*/([a-z_]+_la-)?##g; s#([a-z0-9_]+)\.o#\1#g'
}

# pairs OBJ...: "A <-> B: a calls f, g; b calls h" for every pair that
# calls each other.
pairs() {
    calls "$@" | awk '
        {
            k = $1 SUBSEP $2
            if (!(k in calls)) calls[k] = $3
            else if (index(" " calls[k] " ", " " $3 " ") == 0) calls[k] = calls[k] " " $3
        }
        END {
            for (k in calls) {
                split(k, ab, SUBSEP)
                r = ab[2] SUBSEP ab[1]
                if ((r in calls) && ab[1] < ab[2])
                    printf "%s <-> %s: %s calls %s; %s calls %s\n", ab[1], ab[2], ab[1], calls[k], ab[2], calls[r]
            }
        }' | short | sort
}

# loops OBJ...: the objects of one ring of calls (A calls B ... calls A),
# as tsort reports the first it finds; nothing when the calls sort.
loops() {
    calls "$@" | awk '{ print $1, $2 }' | sort -u | tsort 2>&1 >/dev/null |
        grep -v 'input contains a loop' | sed 's#^tsort: ##' | short
}

for dir in "$@"; do
    n=$((n + 1))
    if ! command -v nm >/dev/null; then
        echo "ok $n # SKIP $dir: no nm here"
        continue
    fi
    objs=$(objects "$dir")
    if [ -z "$objs" ]; then
        echo "ok $n # SKIP $dir: no objects (not built here)"
        continue
    fi
    # shellcheck disable=SC2086 # object paths have no blanks
    bad=$(pairs $objs)
    if [ -z "$bad" ]; then
        echo "ok $n - no two objects under $dir call each other"
    else
        echo "not ok $n - objects under $dir that call each other"
        echo "$bad" | sed 's/^/# /'
        failed=1
    fi
    n=$((n + 1))
    # shellcheck disable=SC2086
    bad=$(loops $objs)
    if [ -z "$bad" ]; then
        echo "ok $n - no ring of calls among the objects under $dir"
    else
        echo "not ok $n - a ring of calls among the objects under $dir"
        echo "$bad" | tr '\n' ' ' | sed 's/^/# /'
        echo
        failed=1
    fi
done

echo "1..$n"
exit $failed
