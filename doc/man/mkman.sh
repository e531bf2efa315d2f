#!/bin/sh
# Build a man page from its one source, doc/man/NAME.SECTION.in, and what
# the code itself says. POSIX sh and awk only: the pages are generated in
# every build (make, make distcheck, the Debian packages) with nothing
# that a build of ringpoint does not already need.
#
#   mkman.sh [-D NAME=VALUE]... [-H HELPFILE] [-A HEADER]... [-E SETTINGS]
#            TEMPLATE > PAGE
#
# In TEMPLATE (roff):
#   @NAME@          replaced by the value given with -D NAME=VALUE
#                   (@DATE@ is built in: SOURCE_DATE_EPOCH's day, else today)
#   @HELP_SYNOPSIS@ a line of its own: the "Usage:" lines of HELPFILE, the
#                   tool's --help output, as a SYNOPSIS
#   @HELP_BODY@     a line of its own: the rest of HELPFILE, its
#                   "  ITEM  description" lines as a .TP list
#   @API_SYNOPSIS@  a line of its own: the prototype of every RP_API
#                   function of the HEADERs, grouped by header
#   @API_LIST@      a line of its own: every RP_API function with its
#                   Doxygen @brief, grouped by header
#   @SETTINGS_LIST@ a line of its own: the runtime's settings table,
#                   SETTINGS as `ringpoint-info --settings-table` prints it
#                   (NAME, meaning, forms, default, parted by tabs), as a
#                   .TP list
# A placeholder left unreplaced is an error, so a page never ships one.
set -eu

AWK=${AWK:-awk}
defs=
help=
headers=
settings=
while getopts D:H:A:E: opt; do
    case $opt in
    D) defs="$defs$OPTARG
" ;;
    H) help=$OPTARG ;;
    A) headers="$headers $OPTARG" ;;
    E) settings=$OPTARG ;;
    *) echo "usage: mkman.sh [-D NAME=VALUE]... [-H HELP] [-A HEADER]... [-E SETTINGS] TEMPLATE" >&2
       exit 2 ;;
    esac
done
shift $((OPTIND - 1))
template=${1:?usage: mkman.sh [-D NAME=VALUE]... [-H HELP] [-A HEADER]... TEMPLATE}

if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d 2>/dev/null ||
           date -u -r "$SOURCE_DATE_EPOCH" +%Y-%m-%d)
else
    date=$(date -u +%Y-%m-%d)
fi

tmp=${TMPDIR:-/tmp}/mkman.$$
trap 'rm -f "$tmp".*' EXIT INT TERM
: >"$tmp.syn"
: >"$tmp.body"
: >"$tmp.apisyn"
: >"$tmp.apilist"
: >"$tmp.settings"

# Text to roff: backslashes, dashes (options stay copyable), and a
# leading dot or quote that roff would take for a request.
ROFF_ESC='
function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    if (s ~ /^[.\047]/) s = "\\&" s
    return s
}
'

if [ -n "$help" ]; then
    # --help text: "Usage: ..." lines (and their indented continuations)
    # make the SYNOPSIS; in the rest, a line indented by at most 4 spaces
    # with two spaces between an item and its text starts a .TP entry, a
    # deeper-indented line continues the entry, other lines are prose.
    "$AWK" -v syn="$tmp.syn" -v body="$tmp.body" "$ROFF_ESC"'
    # An item: options and command names bold, METAVARS italic.
    function item(s,    n, w, i, out, core, pre, post) {
        n = split(s, w, / /)
        out = ""
        for (i = 1; i <= n; i++) {
            core = w[i]; pre = ""; post = ""
            while (core ~ /^[[]/) { pre = pre "["; core = substr(core, 2) }
            while (core ~ /[],]$/) { post = substr(core, length(core)) post; core = substr(core, 1, length(core) - 1) }
            if (core ~ /^-/ || (i == 1 && core !~ /^[A-Z]/))
                core = "\\fB" esc(core) "\\fR"
            else if (core ~ /^[A-Z][A-Z0-9_]*([[|][A-Z0-9|]*]?)?$/)
                core = "\\fI" esc(core) "\\fR"
            else
                core = esc(core)
            out = out (i > 1 ? " " : "") pre core post
        }
        return out
    }
    function flush() {
        if (desc != "") { print esc(desc) > body; desc = "" }
    }
    # Prose after a list, or after a blank line, starts a paragraph.
    function para() {
        if (intp || (blank && printed)) print ".PP" > body
        intp = 0; blank = 0; printed = 1
    }
    BEGIN { mode = "start" }
    mode != "body" && /^Usage: / {
        sub(/^Usage: /, "")
        cmd = $1; sub(/^[^ ]+ ?/, "")
        printf ".B %s\n%s\n.br\n", esc(cmd), esc($0) > syn
        mode = "usage"; next
    }
    mode == "usage" && /^       *[^ ]/ {
        sub(/^ +/, ""); print esc($0) "\n.br" > syn; next
    }
    /^[ \t]*$/ { flush(); blank = 1; mode = "body"; next }
    /^ ( ? ? ?)[^ ]/ {
        # An item: two or more spaces part it from its text.
        mode = "body"; flush()
        line = $0; sub(/^ +/, "", line)
        if (match(line, /  +/)) {
            it = substr(line, 1, RSTART - 1)
            desc = substr(line, RSTART + RLENGTH)
        } else if (line ~ /^-/) {
            # One space only ("--step-delay-ms MS sleep MS per step"): the
            # item is the options and their METAVARs before the first
            # other word.
            nw = split(line, w, / /); it = w[1]
            for (k = 2; k <= nw && (w[k] ~ /^-/ || w[k] ~ /^[[]?[A-Z][A-Z0-9_|]*[],]*$/); k++)
                it = it " " w[k]
            desc = substr(line, length(it) + 2)
        } else { it = line; desc = "" }
        if (blank && printed && !intp) print ".PP" > body
        printf ".TP\n%s\n", item(it) > body
        intp = 1; blank = 0; printed = 1
        next
    }
    intp && !blank && /^     / {
        line = $0; sub(/^ +/, "", line)
        desc = desc (desc != "" ? " " : "") line
        next
    }
    {
        mode = "body"; flush(); para()
        line = $0; sub(/^ +/, "", line)
        print esc(line) > body
    }
    END { flush() }
    ' "$help"
fi

if [ -n "$headers" ]; then
    # Public headers: each Doxygen comment's @brief (joined into one line)
    # and the declaration after it; RP_API functions are listed. The
    # header's own @file brief heads its group.
    # shellcheck disable=SC2086
    "$AWK" -v syn="$tmp.apisyn" -v list="$tmp.apilist" "$ROFF_ESC"'
    function clean(s) {
        gsub(/@ref[ \t]+/, "", s)
        gsub(/@p[ \t]+/, "", s)
        gsub(/`/, "", s)
        gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s)
        return s
    }
    FNR == 1 {
        hdr = FILENAME; sub(/^.*include\//, "", hdr)
        filebrief = ""; incomment = 0; indecl = 0; nfuncs[hdr] = 0
        order[++nhdrs] = hdr
    }
    incomment {
        line = $0
        if (line ~ /\*\//) { incomment = 0; sub(/\*\/.*/, "", line); endc = 1 } else endc = 0
        sub(/^[ \t]*\*[ \t]?/, "", line)
        if (line ~ /^@brief/) { inbrief = 1; sub(/^@brief[ \t]*/, "", line); brief = line }
        else if (inbrief && (line ~ /^[ \t]*$/ || line ~ /^@/)) inbrief = 0
        else if (inbrief) brief = brief " " line
        if (line ~ /^@file/) isfile = 1
        if (endc) {
            if (isfile) { filebrief = clean(brief); hbrief[hdr] = filebrief; brief = "" }
            isfile = 0; inbrief = 0
        }
        next
    }
    /^[ \t]*\/\*\*/ && !/\/\*\*</ {
        line = $0; sub(/^[ \t]*\/\*\*[ \t]*/, "", line)
        brief = ""; inbrief = 0; isfile = 0
        if (line ~ /\*\//) {
            sub(/[ \t]*\*\/.*/, "", line)
            if (line ~ /^@brief/) { sub(/^@brief[ \t]*/, "", line); brief = line }
            next
        }
        incomment = 1
        if (line ~ /^@brief/) { inbrief = 1; sub(/^@brief[ \t]*/, "", line); brief = line }
        next
    }
    /^RP_API/ || indecl {
        # Kept as laid out in the header, less the RP_API in front.
        if (indecl) { l = $0; sub(/^       /, "", l); decl = decl "\n" l }
        else { decl = $0; sub(/^RP_API[ \t]+/, "", decl) }
        if (decl !~ /;/) { indecl = 1; next }
        indecl = 0
        sub(/;.*/, ";", decl)
        name = decl; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
        n = ++nfuncs[hdr]
        fname[hdr, n] = name; fdecl[hdr, n] = decl; fbrief[hdr, n] = clean(brief)
        if (brief == "") { printf "mkman.sh: %s: %s has no @brief\n", hdr, name > "/dev/stderr"; bad = 1 }
        brief = ""
        next
    }
    END {
        for (h = 1; h <= nhdrs; h++) {
            hd = order[h]
            if (nfuncs[hd] == 0) continue
            printf ".PP\n.nf\n\\fI/* <%s>, included by <ringpoint.h> */\\fR\n", hd > syn
            printf ".SS <%s>\n%s\n", hd, esc(hbrief[hd]) > list
            for (i = 1; i <= nfuncs[hd]; i++) {
                d = fdecl[hd, i]
                # The name in bold, the rest as declared.
                k = index(d, fname[hd, i] "(")
                printf "%s\\fB%s\\fR%s\n", esc(substr(d, 1, k - 1)), esc(fname[hd, i]), \
                    esc(substr(d, k + length(fname[hd, i]))) > syn
                printf ".TP\n.BR %s ()\n%s\n", esc(fname[hd, i]), esc(fbrief[hd, i]) > list
            }
            print ".fi" > syn
        }
        exit bad
    }
    ' $headers
fi

if [ -n "$settings" ]; then
    # The settings table: the name in bold, then the meaning, the accepted
    # forms and the default.
    "$AWK" -F '\t' -v out="$tmp.settings" "$ROFF_ESC"'
    NF != 4 { printf "mkman.sh: %s:%d: not NAME, meaning, forms, default\n", FILENAME, FNR > "/dev/stderr"; bad = 1; next }
    { printf ".TP\n.B %s\n%s\nAccepted: %s.\nDefault: %s.\n", esc($1), esc($2), esc($3), esc($4) > out }
    END { exit bad }
    ' "$settings"
fi

# The template, with the values and the generated parts put in.
printf '%s' "$defs" | "$AWK" -v template="$template" -v date="$date" \
    -v f_syn="$tmp.syn" -v f_body="$tmp.body" \
    -v f_apisyn="$tmp.apisyn" -v f_apilist="$tmp.apilist" \
    -v f_settings="$tmp.settings" '
function cat(f,    l) { while ((getline l < f) > 0) print l; close(f) }
function subst(s, name, value,    k, out) {
    out = ""
    while ((k = index(s, "@" name "@")) > 0) {
        out = out substr(s, 1, k - 1) value
        s = substr(s, k + length(name) + 2)
    }
    return out s
}
{ k = index($0, "="); names[++n] = substr($0, 1, k - 1); values[n] = substr($0, k + 1) }
END {
    while ((getline line < template) > 0) {
        if (line == "@HELP_SYNOPSIS@") { cat(f_syn); continue }
        if (line == "@HELP_BODY@") { cat(f_body); continue }
        if (line == "@API_SYNOPSIS@") { cat(f_apisyn); continue }
        if (line == "@API_LIST@") { cat(f_apilist); continue }
        if (line == "@SETTINGS_LIST@") { cat(f_settings); continue }
        line = subst(line, "DATE", date)
        for (i = 1; i <= n; i++) line = subst(line, names[i], values[i])
        if (line ~ /@[A-Z_]+@/) {
            printf "mkman.sh: %s: no value for %s\n", template, line > "/dev/stderr"
            bad = 1
        }
        print line
    }
    exit bad
}'
