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
	runtime/core/settings_table.c runtime/core/settings.h \
	runtime/init.c \
	runtime/bootstrap/bootstrap.c runtime/bootstrap/bootstrap.h \
	runtime/bootstrap/host.c runtime/bootstrap/host.h \
	runtime/bootstrap/launch.c runtime/bootstrap/launch.h \
	runtime/bootstrap/single.c \
	runtime/signal/signal.c runtime/signal/signal.h \
	runtime/transport/transport.c runtime/transport/transport.h \
	runtime/transport/liveness.c runtime/transport/liveness.h \
	runtime/coll/api.c runtime/coll/api.h runtime/coll/api_exchange.c \
	runtime/coll/backend.h runtime/coll/host.c \
	runtime/coll/chunk.c runtime/coll/chunk.h \
	runtime/coll/comm.c runtime/coll/comm.h \
	runtime/coll/comm_create.c runtime/coll/comm_create.h \
	runtime/coll/algo.h \
	runtime/coll/eval.c runtime/coll/eval.h \
	runtime/coll/allreduce_ring.c \
	runtime/coll/allreduce_owners.c \
	runtime/coll/allreduce_rd.c \
	runtime/coll/allreduce_rh.c \
	runtime/coll/broadcast.c \
	runtime/coll/allgather.c \
	runtime/coll/alltoall.c \
	runtime/coll/join.c \
	runtime/coll/ring.h \
	runtime/coll/barrier.c \
	runtime/coll/select.c runtime/coll/select.h \
	runtime/coll/allreduce_group.c \
	runtime/coll/reduce_scatter_group.c \
	runtime/coll/shm.c runtime/coll/shm.h runtime/coll/shm_setup.c \
	runtime/coll/shm_coll.c \
	runtime/coll/shm_cma.c \
	runtime/coll/hier.c runtime/coll/hier.h runtime/coll/hier_setup.c \
	runtime/coll/tune.c runtime/coll/tune.h \
	runtime/coll/subcomm.c runtime/coll/subcomm.h \
	runtime/coll/subcomm_backend.c \
	runtime/coll/subcomm_plan.c runtime/coll/subcomm_plan.h \
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
	runtime/ckpt/format/crc32c.c runtime/ckpt/format/crc32c.h \
	runtime/ckpt/format/fileio.c runtime/ckpt/format/fileio.h \
	runtime/ckpt/format/layout.c runtime/ckpt/format/layout.h \
	runtime/ckpt/format/manifest_grammar.c runtime/ckpt/format/manifest_grammar.h \
	runtime/ckpt/format/manifest.c runtime/ckpt/format/manifest.h \
	runtime/ckpt/format/manifest_int.h \
	runtime/ckpt/format/manifest_encode.c runtime/ckpt/format/manifest_encode.h \
	runtime/ckpt/format/manifest_parse.c runtime/ckpt/format/manifest_parse.h \
	runtime/ckpt/format/shard.c runtime/ckpt/format/shard.h \
	runtime/ckpt/format/shardio.c runtime/ckpt/format/shardio.h \
	runtime/ckpt/format/cursor.c runtime/ckpt/format/cursor.h \
	runtime/ckpt/format/worker.c runtime/ckpt/format/worker.h \
	runtime/ckpt/catalog/verdict.c runtime/ckpt/catalog/verdict.h \
	runtime/ckpt/catalog/checkfile.c runtime/ckpt/catalog/checkfile.h \
	runtime/ckpt/catalog/validate_shard.c runtime/ckpt/catalog/validate_shard.h \
	runtime/ckpt/catalog/validate.c runtime/ckpt/catalog/validate.h \
	runtime/ckpt/catalog/catalog.c runtime/ckpt/catalog/catalog.h \
	runtime/ckpt/catalog/catalog_int.h \
	runtime/ckpt/catalog/prune.c runtime/ckpt/catalog/prune.h \
	runtime/ckpt/engine/budget.c runtime/ckpt/engine/budget.h \
	runtime/ckpt/engine/watchdog.c runtime/ckpt/engine/watchdog.h \
	runtime/ckpt/engine/engine.c runtime/ckpt/engine/engine.h \
	runtime/ckpt/engine/regions.c runtime/ckpt/engine/regions.h \
	runtime/ckpt/engine/root.c runtime/ckpt/engine/root.h \
	runtime/ckpt/engine/devstage.c runtime/ckpt/engine/devstage.h \
	runtime/ckpt/engine/api.c \
	runtime/ckpt/write/write_local.c runtime/ckpt/write/write_local.h \
	runtime/ckpt/write/pcopy.c runtime/ckpt/write/pcopy.h \
	runtime/ckpt/write/commit.c runtime/ckpt/write/commit.h \
	runtime/ckpt/write/async.c runtime/ckpt/write/async.h \
	runtime/ckpt/read/reader_int.h \
	runtime/ckpt/read/reader.c runtime/ckpt/read/reader.h \
	runtime/ckpt/read/reader_plan.c runtime/ckpt/read/reader_plan.h \
	runtime/ckpt/read/reader_shard.c runtime/ckpt/read/reader_shard.h \
	runtime/ckpt/read/reader_find.c runtime/ckpt/read/reader_find.h
runtime_libringpoint_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DRP_PKGLIBDIR='"$(pkglibdir)"' \
	-DRP_SYSCONFDIR='"$(sysconfdir)"'
runtime_libringpoint_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
runtime_libringpoint_core_la_LIBADD = runtime/libringpoint_util.la -lpthread
# What anything linking the core (the library, unit tests) needs at link time.
RP_DEPS_LDFLAGS =
RP_DEPS_LIBS =
if HAVE_PMIX
runtime_libringpoint_core_la_SOURCES += runtime/bootstrap/pmix.c \
	runtime/bootstrap/pmix_job.c runtime/bootstrap/pmix_int.h
runtime_libringpoint_core_la_CPPFLAGS += $(PMIX_CPPFLAGS)
RP_DEPS_LDFLAGS += $(PMIX_LDFLAGS)
RP_DEPS_LIBS += $(PMIX_LIBS)
endif
# The UCX transport is a module (below) that the library opens when a job
# of several ranks creates its transport: the library links no UCX.
if HAVE_UCX
runtime_libringpoint_core_la_SOURCES += runtime/transport/loader.c \
	runtime/transport/module.h
# From the build tree (make check, the Python tests) the module is looked
# for in the build tree; an installed library looks in pkglibdir.
runtime_libringpoint_core_la_CPPFLAGS += -DRP_ABS_BUILDDIR='"$(abs_top_builddir)"'
endif

pkglib_LTLIBRARIES =

# The UCX transport, a module libringpoint dlopens on first use
# (runtime/transport/loader.c), so that nothing loads UCX (which reads
# ucx.conf files, the working directory's among them) before a job
# communicates. Only its entry point is exported.
if HAVE_UCX
pkglib_LTLIBRARIES += runtime/transport/ringpoint-ucx.la
runtime_transport_ringpoint_ucx_la_SOURCES = \
	runtime/transport/module.h runtime/transport/ucx_int.h \
	runtime/transport/ucx_module.c runtime/transport/ucx_setup.c \
	runtime/transport/ucx_tune.c runtime/transport/ucx_data.c \
	runtime/transport/ucx_stall.c runtime/transport/ucx_host.c \
	runtime/transport/ucx_host.h
runtime_transport_ringpoint_ucx_la_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CPPFLAGS)
runtime_transport_ringpoint_ucx_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
# ucs_status_string() is libucs's; the check only finds libucp.
runtime_transport_ringpoint_ucx_la_LIBADD = $(UCX_LIBS) -lucs
runtime_transport_ringpoint_ucx_la_LDFLAGS = $(AM_LDFLAGS) $(UCX_LDFLAGS) \
	-module -avoid-version -shared -no-undefined \
	-export-symbols-regex '^rp_transport_module_v1$$'
endif

# The GPU path's CUDA/NCCL side, a module libringpoint dlopens on demand
# (runtime/gpu/loader.c): never linked into libringpoint, so the library
# and the plugin run where there is no CUDA.
if HAVE_GPU_MODULE
pkglib_LTLIBRARIES += runtime/nccl/ringpoint-nccl.la
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
