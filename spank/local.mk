# The SPANK plugin ringpoint.so. It links only the dependency-free helpers:
# srun, sbatch and slurmstepd load it, and must not pull in PMIx or UCX.
if HAVE_SLURM
slurmplugindir = $(SLURM_PLUGINDIR)
slurmplugin_LTLIBRARIES = spank/ringpoint.la
spank_ringpoint_la_SOURCES = \
	spank/plugin.c \
	spank/options.c spank/options.h \
	spank/admin.c spank/admin.h \
	spank/ckpt_dir.c spank/ckpt_dir.h \
	spank/requeue.c spank/requeue.h spank/requeue_policy.c \
	spank/job_limits.c spank/job_limits.h \
	runtime/util/step_marker.h
spank_ringpoint_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
spank_ringpoint_la_LIBADD = runtime/libringpoint_util.la
spank_ringpoint_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/spank/ringpoint.map
EXTRA_spank_ringpoint_la_DEPENDENCIES = spank/ringpoint.map
endif
EXTRA_DIST += spank/ringpoint.map

# libtool installs ringpoint.la beside the plugin; Slurm needs only the .so.
install-data-hook: install-spank-hook
install-spank-hook:
if HAVE_SLURM
	rm -f $(DESTDIR)$(slurmplugindir)/ringpoint.la
endif
uninstall-hook:
if HAVE_SLURM
	rm -f $(DESTDIR)$(slurmplugindir)/ringpoint.so
endif
