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
	contrib/examples/train.sbatch contrib/examples/horovod_train.py

# The example training job, also installed ready to run: the demo and the
# preemption tests use it.
bin_PROGRAMS += contrib/examples/ringpoint-example-train
contrib_examples_ringpoint_example_train_SOURCES = contrib/examples/train.c
contrib_examples_ringpoint_example_train_LDADD = runtime/libringpoint.la -lm

# Benchmarks beside ringpoint-bench: Open MPI's MPI_Allreduce (built when
# configure finds mpicc) and PyTorch's gloo, both printing ringpoint-bench's
# table; scripts/bench-allreduce.sh runs them interleaved. Installed next to
# ringpoint-coll-check, where that script looks for them. The PyTorch ones
# (ringpoint.torch beside gloo: allreduce, and a training step) share
# benchcommon.py, which they import from their own directory.
benchdir = $(pkglibexecdir)
dist_bench_SCRIPTS = contrib/bench/gloo_allreduce.py \
	contrib/bench/torch_allreduce.py contrib/bench/torch_train_step.py
dist_bench_DATA = contrib/bench/benchcommon.py
# The memory roofline the ring is held against (doc/benchmarks.md).
bench_PROGRAMS = contrib/bench/ringpoint-membw
contrib_bench_ringpoint_membw_SOURCES = contrib/bench/membw.c
# Plots the rows scripts/bench-allreduce.sh keeps (doc/benchmarks.md).
EXTRA_DIST += contrib/bench/plot_bench.py
# rp_barrier in ringpoint-bench's table, beside mpi-allreduce-bench -C barrier.
bench_PROGRAMS += contrib/bench/ringpoint-barrier-bench
contrib_bench_ringpoint_barrier_bench_SOURCES = contrib/bench/barrier_bench.c \
	runtime/tools/benchtable.c runtime/tools/benchtable.h
contrib_bench_ringpoint_barrier_bench_LDADD = runtime/libringpoint.la
# The GPU path beside CUDA's and NCCL's own rates (doc/benchmarks.md, GPU):
# the one program of the project that links CUDA and NCCL itself.
if HAVE_GPU_MODULE
bench_PROGRAMS += contrib/bench/ringpoint-gpu-bench
contrib_bench_ringpoint_gpu_bench_SOURCES = contrib/bench/gpu_bench.c
contrib_bench_ringpoint_gpu_bench_CPPFLAGS = $(AM_CPPFLAGS) $(GPU_MODULE_CPPFLAGS)
contrib_bench_ringpoint_gpu_bench_LDADD = runtime/libringpoint_core.la \
	$(RP_DEPS_LIBS) $(NCCL_LIBS) $(CUDA_LIBS)
contrib_bench_ringpoint_gpu_bench_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS) \
	$(CUDA_LDFLAGS) $(NCCL_LDFLAGS)
else
EXTRA_DIST += contrib/bench/gpu_bench.c
endif
if HAVE_MPI
bench_PROGRAMS += contrib/bench/mpi-allreduce-bench
# Its table, statistic and inputs are ringpoint-bench's own source.
contrib_bench_mpi_allreduce_bench_SOURCES = contrib/bench/mpi_allreduce.c \
	runtime/tools/benchtable.c runtime/tools/benchtable.h
contrib_bench_mpi_allreduce_bench_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
contrib_bench_mpi_allreduce_bench_LDADD = $(MPI_LIBS)
if HAVE_UCX
# UCX's own tagged exchange between two ranks: the floor under a small
# 2-rank collective over UCX, beside ringpoint and Open MPI's pml ucx.
bench_PROGRAMS += contrib/bench/ucx-exchange-bench
contrib_bench_ucx_exchange_bench_SOURCES = contrib/bench/ucx_exchange.c \
	runtime/tools/benchtable.c runtime/tools/benchtable.h
contrib_bench_ucx_exchange_bench_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) $(UCX_CPPFLAGS)
contrib_bench_ucx_exchange_bench_LDFLAGS = $(UCX_LDFLAGS)
contrib_bench_ucx_exchange_bench_LDADD = $(MPI_LIBS) $(UCX_LIBS) -lucs
else
EXTRA_DIST += contrib/bench/ucx_exchange.c
endif
else
EXTRA_DIST += contrib/bench/mpi_allreduce.c contrib/bench/ucx_exchange.c
endif
