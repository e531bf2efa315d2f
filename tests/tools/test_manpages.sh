#!/usr/bin/env bash
# The man pages against the code (TAP). Run by make check from the build
# directory, where the pages (doc/man/) and tools (runtime/tools/) are;
# the code is read from $srcdir.
#   ringpoint(8): an OPTIONS entry for every option of spank/options.c's
#     table and nothing else, an ENVIRONMENT entry for each option's
#     environment twin, a SITE SETTINGS entry for every key spank/admin.c
#     parses and nothing else;
#   ringpoint-{ckpt,bench,info,example-train}(1): every option of --help;
#   libringpoint(3): every RP_API function of the public headers, and with
#     ringpoint(8) an ENVIRONMENT entry for every RINGPOINT_* variable that
#     runtime/ reads (but the plugin's private step channel and markers
#     and the tests' fault injection); and its ENVIRONMENT is exactly the
#     settings table's (ringpoint-info --settings-table), both ways;
#   every page: no placeholder left, and groff finds nothing to warn about.
set -u
src=${srcdir:-.}
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { # not_ok NAME DETAIL...
    n=$((n + 1))
    echo "not ok $n - $1"
    shift
    printf '# %s\n' "$@"
    failed=1
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# Roff to text, enough for names: escapes out, a font macro's arguments
# joined (.BR --ckpt-keep =N reads --ckpt-keep=N).
deroff() {
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\e/\\/g' \
        -e '/^\.[BIR][BIR]* /{s/^\.[BIR]* //;s/"//g;s/ //g;}' "$@"
}

# "SECTION<TAB>heading" for every .TP entry of a page.
headings() { # headings PAGE
    deroff "$1" |
    awk '/^\.SH /{sec=$0; sub(/^\.SH "?/, "", sec); sub(/"$/, "", sec); next}
         tp {print sec "\t" $0; tp = 0; next}
         /^\.TP/ {tp = 1}'
}

# What is missing from a list: lines of $1 not in $2.
missing() { comm -23 <(printf '%s\n' "$1" | sort -u) <(printf '%s\n' "$2" | sort -u); }

in_list() { # in_list NAME WANT HAVE: every line of WANT in HAVE
    local lack
    lack=$(missing "$2" "$3")
    if [ -z "$2" ]; then
        not_ok "$1" "found nothing to check: has the code's layout changed?"
    elif [ -n "$lack" ]; then
        not_ok "$1" "missing: $(echo $lack)"
    else
        ok "$1"
    fi
}

echo "1..15"

# ---- ringpoint(8)
page=doc/man/ringpoint.8
code_opts=$(awk '/rp_spank_options\[\] = \{/{t=1; next} t && /^\};/{t=0}
                 t && /^ *\{"/{s=$0; sub(/^ *\{"/, "", s); sub(/".*/, "", s); print s}' \
                "$src/spank/options.c")
code_envs=$(awk '/rp_settings\[RP_SET_COUNT\] = \{/{t=1; next} t && /^\};/{t=0}
                 t {while (match($0, /"RINGPOINT_[A-Z_]+"/)) {
                        print substr($0, RSTART + 1, RLENGTH - 2)
                        $0 = substr($0, RSTART + RLENGTH)}}' "$src/spank/options.c")
code_keys=$(grep -o 'rp_key_is(arg, keylen, "[a-z_]*")' "$src/spank/admin.c" |
            sed 's/.*"\(.*\)")/\1/')
if [ -f "$page" ]; then
    h=$(headings "$page")
    page_opts=$(printf '%s\n' "$h" | sed -n 's/^OPTIONS\t--\([a-z-]*\).*/\1/p')
    page_envs=$(printf '%s\n' "$h" | sed -n 's/^ENVIRONMENT\t\([A-Z_]*\).*/\1/p')
    page_keys=$(printf '%s\n' "$h" | sed -n 's/^SITE SETTINGS\t\([a-z_]*\)=.*/\1/p')
    in_list "ringpoint.8 documents every option of spank/options.c" "$code_opts" "$page_opts"
    in_list "ringpoint.8 documents no option the code lacks" "$page_opts" "$code_opts"
    in_list "ringpoint.8 documents every option's environment twin" "$code_envs" "$page_envs"
    in_list "ringpoint.8 documents every site key of spank/admin.c" "$code_keys" "$page_keys"
    in_list "ringpoint.8 documents no site key the code lacks" "$page_keys" "$code_keys"
else
    for t in options "no stale options" "environment twins" "site keys" "no stale keys"; do
        skip "ringpoint.8: $t" "no SPANK plugin in this build"
    done
fi

# ---- the tools: every option of --help among the page's entries
for bin in runtime/tools/ringpoint-ckpt runtime/tools/ringpoint-bench \
    runtime/tools/ringpoint-info contrib/examples/ringpoint-example-train; do
    tool=${bin##*/ringpoint-}
    page=doc/man/ringpoint-$tool.1
    # The items of --help ("  -b, --minbytes SIZE   text"), their options.
    help_opts=$("$bin" --help | awk '/^ ( ? ? ?)[^ ]/{s=$0; sub(/^ +/, "", s); sub(/  .*/, "", s); print s}' |
                tr ' ,[]' '\n\n\n\n' | grep -E '^--?[A-Za-z]' | sed 's/=.*//')
    page_opts=$(headings "$page" | cut -f2 | tr ' ,[]' '\n\n\n\n' | grep -E '^--?[A-Za-z]' | sed 's/=.*//')
    in_list "ringpoint-$tool.1 has every option of ringpoint-$tool --help" "$help_opts" "$page_opts"
done

# ---- libringpoint(3)
page=doc/man/libringpoint.3
api=$(cat "$src"/include/ringpoint/*.h |
      awk '/^RP_API/{d=$0; while (d !~ /\(/ && (getline l) > 0) d = d " " l
                     sub(/\(.*/, "", d); sub(/.*[ *]/, "", d); print d}')
page_api=$(headings "$page" | sed -n 's/^FUNCTIONS\t\([a-z_0-9]*\)().*/\1/p')
in_list "libringpoint.3 lists every RP_API function of include/ringpoint/" "$api" "$page_api"
lib_envs=$(grep -rhoE '"RINGPOINT_[A-Z0-9_]+"' "$src/runtime" --include='*.c' --include='*.h' |
           tr -d '"' | grep -vxE 'RINGPOINT_(STEP_FD|CKPT_FAULT|PLUGIN_SET|SITE_INTERVAL)' | sort -u)
plugin_page=doc/man/ringpoint.8
[ -f "$plugin_page" ] || plugin_page=$src/doc/man/ringpoint.8.in
page_envs=$( (headings "$page"; headings "$plugin_page") |
            sed -n 's/^ENVIRONMENT\t\(RINGPOINT_[A-Z0-9_]*\).*/\1/p')
in_list "libringpoint.3 and ringpoint.8 document every RINGPOINT_* variable of runtime/" \
    "$lib_envs" "$page_envs"

table_envs=$(runtime/tools/ringpoint-info --settings-table | cut -f1)
lib_page_envs=$(headings "$page" | sed -n 's/^ENVIRONMENT\t\(RINGPOINT_[A-Z0-9_]*\).*/\1/p')
in_list "libringpoint.3 documents every entry of the settings table" \
    "$table_envs" "$lib_page_envs"
in_list "libringpoint.3 documents no setting the table lacks" \
    "$lib_page_envs" "$table_envs"

# ---- every page
pages=$(ls doc/man/*.[138] 2>/dev/null)
if grep -n '@[A-Z_]*@' $pages /dev/null; then
    not_ok "no placeholder left in the pages"
else
    ok "no placeholder left in the pages"
fi
if command -v groff >/dev/null 2>&1; then
    # All warnings but the "break" class ("cannot adjust line"), which
    # depends on how long the installation paths are; lintian ignores it too.
    warn=$(for p in $pages; do groff -man -ww -Wbreak -z -Tutf8 "$p" 2>&1 | sed "s|^|$p: |"; done)
    if [ -n "$warn" ]; then
        not_ok "groff -ww finds nothing to warn about" "$warn"
    else
        ok "groff -ww finds nothing to warn about"
    fi
else
    skip "groff -ww finds nothing to warn about" "no groff"
fi
exit $failed
