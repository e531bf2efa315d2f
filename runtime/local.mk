# libringpoint and the command-line tools.

# Dependency-free helpers shared with the SPANK plugin (no PMIx, no UCX:
# srun must not load those to parse an option).
noinst_LTLIBRARIES += runtime/libringpoint_util.la
runtime_libringpoint_util_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
runtime_libringpoint_util_la_SOURCES = \
	runtime/util/deadline.h \
	runtime/util/log.c runtime/util/log.h \
	runtime/util/parse.c runtime/util/parse.h \
	runtime/util/status.c \
	runtime/util/str.c runtime/util/str.h \
	runtime/util/step_marker.h

# Everything of the runtime as a convenience library, so unit tests can
# link internals that the shared library hides.
noinst_LTLIBRARIES += runtime/libringpoint_core.la
runtime_libringpoint_core_la_SOURCES = \
	runtime/core/context.c runtime/core/context.h \
	runtime/core/fork.c runtime/core/fork.h \
	runtime/core/peer.c runtime/core/peer.h \
	runtime/core/settings.c runtime/core/settings.h \
	runtime/bootstrap/bootstrap.c runtime/bootstrap/bootstrap.h \
	runtime/bootstrap/single.c \
	runtime/signal/signal.c runtime/signal/signal.h \
	runtime/transport/transport.c runtime/transport/transport.h \
	runtime/transport/liveness.c runtime/transport/liveness.h \
	runtime/coll/api.c \
	runtime/coll/backend.h runtime/coll/host.c \
	runtime/coll/chunk.c runtime/coll/chunk.h \
	runtime/coll/comm.c runtime/coll/comm.h \
	runtime/coll/comm_create.c runtime/coll/comm_create.h \
	runtime/coll/algo.h \
	runtime/coll/allreduce_ring.c \
	runtime/coll/allreduce_rd.c \
	runtime/coll/broadcast.c \
	runtime/coll/allgather.c \
	runtime/coll/ring.h \
	runtime/coll/barrier.c \
	runtime/coll/select.c runtime/coll/select.h \
	runtime/coll/allreduce_group.c \
	runtime/coll/shm.c runtime/coll/shm.h runtime/coll/shm_setup.c \
	runtime/coll/shm_coll.c \
	runtime/coll/shm_cma.c runtime/coll/shm_eval.h \
	runtime/coll/hier.c runtime/coll/hier.h runtime/coll/hier_setup.c \
	runtime/coll/tune.c runtime/coll/tune.h \
	runtime/gpu/gpu.h runtime/gpu/path.h \
	runtime/gpu/gpu.c runtime/gpu/coll.c runtime/gpu/loader.c \
	runtime/gpu/probe.c \
	runtime/gpu/binding.c runtime/gpu/uid.c \
	runtime/gpu/devbuf.c runtime/gpu/devbuf.h \
	runtime/coll/progress.c runtime/coll/progress.h \
	runtime/coll/request.c runtime/coll/request.h \
	runtime/coll/dispatch.c runtime/coll/dispatch.h \
	runtime/reduce/dtype.c \
	runtime/reduce/reduce.c runtime/reduce/reduce.h \
	runtime/reduce/reduce_generic.c \
	runtime/reduce/reduce_x86.c \
	runtime/reduce/half.h runtime/reduce/kernels.h \
	runtime/reduce/kernels_impl.h runtime/reduce/simd.h \
	runtime/ckpt/budget.c runtime/ckpt/budget.h \
	runtime/ckpt/watchdog.c runtime/ckpt/watchdog.h \
	runtime/ckpt/catalog.c runtime/ckpt/catalog.h \
	runtime/ckpt/catalog_int.h runtime/ckpt/validate.c \
	runtime/ckpt/validate.h runtime/ckpt/verdict.c \
	runtime/ckpt/prune.c \
	runtime/ckpt/crc32c.c runtime/ckpt/crc32c.h \
	runtime/ckpt/fileio.c runtime/ckpt/fileio.h \
	runtime/ckpt/layout.c runtime/ckpt/layout.h \
	runtime/ckpt/manifest.c runtime/ckpt/manifest.h \
	runtime/ckpt/manifest_int.h runtime/ckpt/manifest_encode.c \
	runtime/ckpt/manifest_parse.c \
	runtime/ckpt/shard.c runtime/ckpt/shard.h \
	runtime/ckpt/write_local.c runtime/ckpt/write_local.h \
	runtime/ckpt/shardio.c runtime/ckpt/shardio.h \
	runtime/ckpt/cursor.c runtime/ckpt/worker.c \
	runtime/ckpt/pcopy.c runtime/ckpt/pcopy.h \
	runtime/ckpt/engine.c runtime/ckpt/engine.h \
	runtime/ckpt/regions.c \
	runtime/ckpt/devstage.c runtime/ckpt/devstage.h \
	runtime/ckpt/commit.c \
	runtime/ckpt/async.c \
	runtime/ckpt/reader.c runtime/ckpt/reader.h \
	runtime/ckpt/reader_plan.c runtime/ckpt/reader_shard.c \
	runtime/ckpt/reader_find.c \
	runtime/ckpt/api.c
runtime_libringpoint_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DRP_PKGLIBDIR='"$(pkglibdir)"' \
	-DRP_SYSCONFDIR='"$(sysconfdir)"'
runtime_libringpoint_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
runtime_libringpoint_core_la_LIBADD = runtime/libringpoint_util.la -lpthread
# What anything linking the core (the library, unit tests) needs at link time.
RP_DEPS_LDFLAGS =
RP_DEPS_LIBS =
if HAVE_PMIX
runtime_libringpoint_core_la_SOURCES += runtime/bootstrap/pmix.c
runtime_libringpoint_core_la_CPPFLAGS += $(PMIX_CPPFLAGS)
RP_DEPS_LDFLAGS += $(PMIX_LDFLAGS)
RP_DEPS_LIBS += $(PMIX_LIBS)
endif
if HAVE_UCX
runtime_libringpoint_core_la_SOURCES += runtime/transport/ucx.c
runtime_libringpoint_core_la_CPPFLAGS += $(UCX_CPPFLAGS)
RP_DEPS_LDFLAGS += $(UCX_LDFLAGS)
# ucs_status_string() is libucs's; the check only finds libucp.
RP_DEPS_LIBS += $(UCX_LIBS) -lucs
endif

# The GPU path's CUDA/NCCL side, a module libringpoint dlopens on demand
# (runtime/gpu/loader.c): never linked into libringpoint, so the library
# and the plugin run where there is no CUDA.
if HAVE_GPU_MODULE
pkglib_LTLIBRARIES = runtime/nccl/ringpoint-nccl.la
runtime_nccl_ringpoint_nccl_la_SOURCES = \
	runtime/nccl/nccl_int.h runtime/nccl/module.c runtime/nccl/comm.c
runtime_nccl_ringpoint_nccl_la_CPPFLAGS = $(AM_CPPFLAGS) $(GPU_MODULE_CPPFLAGS)
runtime_nccl_ringpoint_nccl_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
runtime_nccl_ringpoint_nccl_la_LIBADD = $(NCCL_LIBS) $(CUDA_LIBS)
runtime_nccl_ringpoint_nccl_la_LDFLAGS = $(AM_LDFLAGS) $(CUDA_LDFLAGS) \
	$(NCCL_LDFLAGS) -module -avoid-version -shared -no-undefined
endif

lib_LTLIBRARIES += runtime/libringpoint.la
runtime_libringpoint_la_SOURCES =
runtime_libringpoint_la_LIBADD = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
runtime_libringpoint_la_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS) \
	-version-info $(RP_LT_VERSION) -no-undefined

bin_PROGRAMS += runtime/tools/ringpoint-info
runtime_tools_ringpoint_info_SOURCES = runtime/tools/info.c
# The core rather than the shared library: it asks the GPU module
# (runtime/gpu/) what it sees, which the shared library hides.
runtime_tools_ringpoint_info_LDADD = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
runtime_tools_ringpoint_info_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS)

# nccl-tests-style collective benchmark. The core rather than the shared
# library: its device mode (-D cuda) allocates GPU memory through the GPU
# module's wrappers (runtime/gpu/devbuf.h), which the shared library hides.
bin_PROGRAMS += runtime/tools/ringpoint-bench
runtime_tools_ringpoint_bench_SOURCES = runtime/tools/bench.c \
	runtime/tools/bench.h runtime/tools/bench_opts.c \
	runtime/tools/bench_loop.c runtime/tools/bench_check.c \
	runtime/tools/bench_device.c runtime/tools/bench_tune.c \
	runtime/tools/benchtable.c runtime/tools/benchtable.h
runtime_tools_ringpoint_bench_LDADD = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
runtime_tools_ringpoint_bench_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS)

# ringpoint-ckpt works on the format layer's internals: it links the
# convenience library rather than the shared one, which hides them.
bin_PROGRAMS += runtime/tools/ringpoint-ckpt
runtime_tools_ringpoint_ckpt_SOURCES = runtime/tools/ckpt.c runtime/tools/ckpt_bench.c \
	runtime/tools/ckpt_bench_base.c runtime/tools/ckpt_bench.h \
	runtime/tools/ckpt_cmd.c runtime/tools/ckpt_tool.h
runtime_tools_ringpoint_ckpt_LDADD = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
runtime_tools_ringpoint_ckpt_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS)
