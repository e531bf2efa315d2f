dnl RP_CHECK_PYTHON: the interpreter the Python package is installed for.
dnl
dnl --with-python[=PYTHON]: default /usr/bin/python3, Debian's, for which
dnl Debian's python3-torch is built (a python3 that pyenv or a venv put
dnl first on PATH usually cannot import it). --without-python skips the
dnl package. Asked for and missing is an error; missing by default, a
dnl warning. The package goes into PREFIX/lib/pythonX.Y/dist-packages
dnl when the interpreter is Debian's (that directory is on its sys.path
dnl for PREFIX=/usr/local), else site-packages; --with-pythondir=DIR
dnl overrides.
AC_DEFUN([RP_CHECK_PYTHON], [
AC_ARG_WITH([python],
    [AS_HELP_STRING([--with-python@<:@=PYTHON@:>@],
        [install the Python package (ringpoint, ringpoint.torch) for PYTHON
         @<:@default=/usr/bin/python3@:>@])],
    [], [with_python=check])
AC_ARG_WITH([pythondir],
    [AS_HELP_STRING([--with-pythondir=DIR],
        [where the Python package goes @<:@PREFIX/lib/pythonX.Y/dist-packages@:>@])],
    [], [with_pythondir=])
rp_have_python=no
AS_CASE([$with_python],
    [no], [],
    [yes|check], [RP_PYTHON=/usr/bin/python3],
    [RP_PYTHON=$with_python])
AS_IF([test "$with_python" != no], [
    AC_MSG_CHECKING([for Python 3 at $RP_PYTHON])
    rp_python_version=`$RP_PYTHON -c 'import sys; print("%d.%d" % sys.version_info[[:2]]) if sys.version_info >= (3, 8) else sys.exit(1)' 2>/dev/null`
    AS_IF([test -n "$rp_python_version"], [
        rp_have_python=yes
        AC_MSG_RESULT([$rp_python_version])
        rp_python_sub=`$RP_PYTHON -c 'import sys; print("dist-packages" if any(p.endswith("dist-packages") for p in sys.path) else "site-packages")'`
        AS_IF([test -n "$with_pythondir"],
            [RP_PYTHONDIR=$with_pythondir],
            [RP_PYTHONDIR='${prefix}'/lib/python$rp_python_version/$rp_python_sub])
        rp_python_torch=`$RP_PYTHON -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "not found"`
    ], [
        AC_MSG_RESULT([no])
        AS_IF([test "$with_python" = check],
            [AC_MSG_WARN([$RP_PYTHON not found: the Python package will not be installed (apt-get install python3)])],
            [AC_MSG_ERROR([--with-python=$with_python: not a Python 3.8 or newer interpreter])])
    ])
])
AC_SUBST([RP_PYTHON])
AC_SUBST([RP_PYTHONDIR])
AM_CONDITIONAL([HAVE_PYTHON], [test $rp_have_python = yes])
])
