# The plugstack.conf snippet an admin drops into plugstack.conf.d/.
pkgdata_DATA = contrib/slurm/ringpoint.conf
CLEANFILES += contrib/slurm/ringpoint.conf
EXTRA_DIST += contrib/slurm/ringpoint.conf.in

contrib/slurm/ringpoint.conf: $(srcdir)/contrib/slurm/ringpoint.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) contrib/slurm && \
	sed -e 's|@plugindir[@]|$(SLURM_PLUGINDIR)|g' \
	    $(srcdir)/contrib/slurm/ringpoint.conf.in > $@.tmp && mv $@.tmp $@

# Examples are installed as source: they show how to build against the
# installed library with pkg-config.
examplesdir = $(pkgdatadir)/examples
dist_examples_DATA = contrib/examples/hello.c contrib/examples/train.c \
	contrib/examples/train.sbatch

# The example training job, also installed ready to run: the demo and the
# preemption tests use it.
bin_PROGRAMS += contrib/examples/ringpoint-example-train
contrib_examples_ringpoint_example_train_SOURCES = contrib/examples/train.c
contrib_examples_ringpoint_example_train_LDADD = runtime/libringpoint.la -lm
