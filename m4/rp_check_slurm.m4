dnl RP_CHECK_SLURM: find Slurm's spank.h, record the version, and choose the
dnl directory the SPANK plugin installs into.
dnl   --with-slurm[=DIR]          default: look in the default include path
dnl   --with-slurm-plugindir=DIR  default: Slurm's own plugin directory
AC_DEFUN([RP_CHECK_SLURM], [
    AC_ARG_WITH([slurm],
        [AS_HELP_STRING([--with-slurm@<:@=DIR@:>@],
            [build the SPANK plugin against Slurm installed in DIR (default: look for it)])],
        [], [with_slurm=check])
    AC_ARG_WITH([slurm-plugindir],
        [AS_HELP_STRING([--with-slurm-plugindir=DIR],
            [install the SPANK plugin into DIR (default: Slurm's plugin directory)])],
        [], [with_slurm_plugindir=])

    rp_have_slurm=no
    rp_slurm_version=
    SLURM_CPPFLAGS=
    AS_IF([test "x$with_slurm" != xno], [
        AS_CASE([$with_slurm],
            [yes|check], [rp_slurm_prefix=/usr],
            [rp_slurm_prefix=$with_slurm
             SLURM_CPPFLAGS="-I$with_slurm/include"])
        rp_save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
        AC_CHECK_HEADER([slurm/spank.h], [rp_have_slurm=yes])
        AS_IF([test $rp_have_slurm = yes], [
            AC_COMPUTE_INT([rp_slurm_vnum], [SLURM_VERSION_NUMBER],
                [#include <slurm/slurm_version.h>], [rp_slurm_vnum=0])
            rp_slurm_version=$(printf '%d.%02d.%d' $(( rp_slurm_vnum >> 16 )) $(( (rp_slurm_vnum >> 8) & 255 )) $(( rp_slurm_vnum & 255 )))
        ])
        CPPFLAGS=$rp_save_CPPFLAGS
    ])
    AS_IF([test $rp_have_slurm = no], [
        AS_IF([test "x$with_slurm" != xno && test "x$with_slurm" != xcheck],
            [AC_MSG_ERROR([--with-slurm was given but slurm/spank.h was not found (install libslurm-dev or fix DIR)])])
        AS_IF([test "x$with_slurm" = xcheck],
            [AC_MSG_WARN([slurm/spank.h not found: the SPANK plugin will not be built])])
    ])

    dnl Slurm loads plugins from its PluginDir; Debian uses a multiarch
    dnl slurm-wlm directory, upstream builds lib/slurm. Detect it by the
    dnl presence of a plugin every Slurm ships.
    AS_IF([test $rp_have_slurm = yes && test -z "$with_slurm_plugindir"], [
        rp_multiarch=$($CC -print-multiarch 2>/dev/null)
        for rp_dir in "$rp_slurm_prefix/lib/$rp_multiarch/slurm-wlm" \
                      "$rp_slurm_prefix/lib/$rp_multiarch/slurm" \
                      "$rp_slurm_prefix/lib64/slurm" "$rp_slurm_prefix/lib/slurm"; do
            AS_IF([test -f "$rp_dir/mpi_none.so" || test -f "$rp_dir/mpi_pmi2.so"],
                [with_slurm_plugindir=$rp_dir; break])
        done
        AS_IF([test -z "$with_slurm_plugindir"], [
            with_slurm_plugindir='${libdir}/slurm'
            AC_MSG_WARN([Slurm's plugin directory not found; installing the plugin into $with_slurm_plugindir (set --with-slurm-plugindir)])
        ])
    ])
    AC_MSG_CHECKING([where to install the SPANK plugin])
    AC_MSG_RESULT([${with_slurm_plugindir:-not built}])

    SLURM_PLUGINDIR=$with_slurm_plugindir
    AC_SUBST([SLURM_PLUGINDIR])
    AC_SUBST([SLURM_CPPFLAGS])
    AS_IF([test $rp_have_slurm = yes], [
        AC_DEFINE_UNQUOTED([RP_SLURM_VERSION], ["$rp_slurm_version"],
            [Slurm version the plugin was built against])
    ])
    AM_CONDITIONAL([HAVE_SLURM], [test $rp_have_slurm = yes])
])
