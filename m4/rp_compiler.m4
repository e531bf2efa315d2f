dnl RP_COMPILER_FLAGS: warnings (always), -Werror and sanitizers (switches),
dnl and hardening in the style of pyxis: the plugin runs inside slurmstepd.
AC_DEFUN([RP_COMPILER_FLAGS], [
    AC_ARG_ENABLE([werror],
        [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors (CI does)])],
        [], [enable_werror=no])
    AC_ARG_ENABLE([sanitizers],
        [AS_HELP_STRING([--enable-sanitizers],
            [build with AddressSanitizer and UndefinedBehaviorSanitizer (for the unit tests)])],
        [], [enable_sanitizers=no])

    RP_CFLAGS="-Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wpointer-arith -Wformat -Wformat-security -Wvla"
    RP_LDFLAGS=
    AS_IF([test "x$enable_werror" = xyes], [RP_CFLAGS="$RP_CFLAGS -Werror"])
    AS_IF([test "x$enable_sanitizers" = xyes], [
        RP_CFLAGS="$RP_CFLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
        RP_LDFLAGS="$RP_LDFLAGS -fsanitize=address,undefined"
    ], [
        dnl _FORTIFY_SOURCE and ASan do not mix; hardening is for real builds.
        RP_CFLAGS="$RP_CFLAGS -fstack-protector-strong -D_FORTIFY_SOURCE=2"
        RP_LDFLAGS="$RP_LDFLAGS -Wl,-z,relro -Wl,-z,now"
    ])
    AC_SUBST([RP_CFLAGS])
    AC_SUBST([RP_LDFLAGS])
])
