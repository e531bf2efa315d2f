dnl RP_CHECK_PKG(NAME, PKGCONFIG-NAME, HEADER, FUNCTION, LIBS, VERSION-TEST, WHAT-NEEDS-IT, [DEFAULT-DIR])
dnl
dnl The common shape of a dependency check: --with-NAME[=DIR]; with DIR use
dnl DIR/include and DIR/lib (or lib64), otherwise ask pkg-config, then try
dnl DEFAULT-DIR if it exists, then the compiler's default paths. Asked for explicitly but missing is an error;
dnl missing by default is a warning and the parts that need it are not built.
dnl Sets NAME_CPPFLAGS, NAME_LDFLAGS, NAME_LIBS, rp_have_NAME, rp_NAME_version.
AC_DEFUN([RP_CHECK_PKG], [
    m4_pushdef([UP], m4_toupper([$1]))
    AC_ARG_WITH([$1],
        [AS_HELP_STRING([--with-$1@<:@=DIR@:>@],
            [use $1 (optionally installed in DIR) for $7 (default: look for it)])],
        [], [with_$1=check])
    rp_have_$1=no
    rp_$1_version=
    UP[]_CPPFLAGS=
    UP[]_LDFLAGS=
    UP[]_LIBS=
    AS_IF([test "x$with_$1" != xno], [
        AS_CASE([$with_$1],
            [yes|check], [
                AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists $2], [
                    UP[]_CPPFLAGS=$($PKG_CONFIG --cflags-only-I $2)
                    UP[]_LDFLAGS=$($PKG_CONFIG --libs-only-L $2)
                    rp_$1_version=$($PKG_CONFIG --modversion $2)
                    rp_$1_libdir=$($PKG_CONFIG --variable=libdir $2)
                ], [test -n "$8" && test -d "$8"], [
                    UP[]_CPPFLAGS="-I$8/include"
                    rp_$1_libdir="$8/lib"
                    AS_IF([test -d "$8/lib64"], [rp_$1_libdir="$8/lib64"])
                    UP[]_LDFLAGS="-L$rp_$1_libdir"
                ])
            ],
            [
                UP[]_CPPFLAGS="-I$with_$1/include"
                rp_$1_libdir="$with_$1/lib"
                AS_IF([test -d "$with_$1/lib64"], [rp_$1_libdir="$with_$1/lib64"])
                UP[]_LDFLAGS="-L$rp_$1_libdir"
            ])
        dnl Record the library directory as a run path so the installed
        dnl library finds a dependency that lives outside the loader's path.
        AS_IF([test -n "$rp_$1_libdir"],
            [UP[]_LDFLAGS="$UP[]_LDFLAGS -Wl,-rpath,$rp_$1_libdir"])
        rp_save_CPPFLAGS=$CPPFLAGS
        rp_save_LDFLAGS=$LDFLAGS
        rp_save_LIBS=$LIBS
        CPPFLAGS="$CPPFLAGS $UP[]_CPPFLAGS"
        LDFLAGS="$LDFLAGS $UP[]_LDFLAGS"
        AC_CHECK_HEADER([$3], [
            AC_SEARCH_LIBS([$4], [$5], [rp_have_$1=yes])
        ])
        AS_IF([test $rp_have_$1 = yes], [$6])
        AS_IF([test $rp_have_$1 = yes], [UP[]_LIBS="$ac_cv_search_$4"])
        AS_IF([test "x$UP[]_LIBS" = "xnone required"], [UP[]_LIBS=])
        CPPFLAGS=$rp_save_CPPFLAGS
        LDFLAGS=$rp_save_LDFLAGS
        LIBS=$rp_save_LIBS
    ])
    AS_IF([test $rp_have_$1 = no], [
        AS_IF([test "x$with_$1" != xno && test "x$with_$1" != xcheck],
            [AC_MSG_ERROR([--with-$1 was given but a usable $1 ($3, -l$5) was not found])])
        AS_IF([test "x$with_$1" = xcheck],
            [AC_MSG_WARN([$1 not found: $7 will not be built])])
    ])
    AS_IF([test $rp_have_$1 = yes], [
        AC_DEFINE([HAVE_]UP, [1], [Define if $1 is available])
        AC_DEFINE_UNQUOTED([RP_]UP[_VERSION], ["$rp_$1_version"], [$1 version built against])
    ])
    AC_SUBST(UP[_CPPFLAGS])
    AC_SUBST(UP[_LDFLAGS])
    AC_SUBST(UP[_LIBS])
    AM_CONDITIONAL([HAVE_]UP, [test $rp_have_$1 = yes])
    m4_popdef([UP])
])

dnl The version of a header-defined macro triple, e.g. PMIX_VERSION_MAJOR.
dnl RP_HEADER_VERSION(VAR, HEADER, MAJOR, MINOR, PATCH)
AC_DEFUN([RP_HEADER_VERSION], [
    AC_COMPUTE_INT([rp_v1], [$3], [#include <$2>], [rp_v1=0])
    AC_COMPUTE_INT([rp_v2], [$4], [#include <$2>], [rp_v2=0])
    AC_COMPUTE_INT([rp_v3], [$5], [#include <$2>], [rp_v3=0])
    $1="$rp_v1.$rp_v2.$rp_v3"
])
