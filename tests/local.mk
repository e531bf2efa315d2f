# Unit tests (make check): cmocka programs, run under the sanitizers in CI.
# The integration tests on a real local Slurm cluster live in tests/slurm/
# and are run by scripts/test.sh, not by make check.
if HAVE_CMOCKA
UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CMOCKA_CFLAGS)
UNIT_LIBS = runtime/libringpoint_core.la $(RP_DEPS_LIBS) $(CMOCKA_LIBS)
UNIT_LINKFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS) -no-install

UNIT_TESTS = tests/unit/test_parse tests/unit/test_status \
	tests/unit/test_admin tests/unit/test_context \
	tests/unit/test_settings \
	tests/unit/test_crc32c tests/unit/test_manifest tests/unit/test_catalog \
	tests/unit/test_ckpt_dir tests/unit/test_signal tests/unit/test_launch tests/unit/test_requeue \
	tests/unit/test_coll tests/unit/test_ckpt_engine tests/unit/test_budget \
	tests/unit/test_ckpt_regions \
	tests/unit/test_gpu_binding tests/unit/test_gpu_path \
	tests/unit/test_liveness tests/unit/test_host_share \
	tests/unit/test_coll_tune tests/unit/test_reduce \
	tests/unit/test_subcomm
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
# The unit tests' shared random data (header only).
EXTRA_DIST += tests/unit/test_rng.h

tests_unit_test_parse_SOURCES = tests/unit/test_parse.c
tests_unit_test_parse_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_parse_LDADD = $(UNIT_LIBS)
tests_unit_test_parse_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_status_SOURCES = tests/unit/test_status.c
tests_unit_test_status_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_status_LDADD = $(UNIT_LIBS)
tests_unit_test_status_LDFLAGS = $(UNIT_LINKFLAGS)

# The admin settings parser is the plugin's; it needs no Slurm to test.
tests_unit_test_admin_SOURCES = tests/unit/test_admin.c spank/admin.c
tests_unit_test_admin_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_admin_LDADD = $(UNIT_LIBS)
tests_unit_test_admin_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_liveness_SOURCES = tests/unit/test_liveness.c
tests_unit_test_liveness_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_liveness_LDADD = $(UNIT_LIBS)
tests_unit_test_liveness_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_host_share_SOURCES = tests/unit/test_host_share.c
tests_unit_test_host_share_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_host_share_LDADD = $(UNIT_LIBS)
tests_unit_test_host_share_LDFLAGS = $(UNIT_LINKFLAGS)

# The reduction kernels against an independent scalar reference.
tests_unit_test_reduce_SOURCES = tests/unit/test_reduce.c
tests_unit_test_reduce_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_reduce_LDADD = $(UNIT_LIBS) -lm
tests_unit_test_reduce_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_coll_tune_SOURCES = tests/unit/test_coll_tune.c
tests_unit_test_coll_tune_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_coll_tune_LDADD = $(UNIT_LIBS)
tests_unit_test_coll_tune_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_budget_SOURCES = tests/unit/test_budget.c
tests_unit_test_budget_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_budget_LDADD = $(UNIT_LIBS)
tests_unit_test_budget_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_context_SOURCES = tests/unit/test_context.c
tests_unit_test_context_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_context_LDADD = $(UNIT_LIBS)
tests_unit_test_context_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_ckpt_dir_SOURCES = tests/unit/test_ckpt_dir.c spank/ckpt_dir.c
tests_unit_test_ckpt_dir_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_ckpt_dir_LDADD = $(UNIT_LIBS)
tests_unit_test_ckpt_dir_LDFLAGS = $(UNIT_LINKFLAGS)

# The requeue policy is the plugin's; it needs no Slurm to test. The
# header it includes pulls in spank.h, which only declares.
tests_unit_test_requeue_SOURCES = tests/unit/test_requeue.c spank/requeue_policy.c \
	spank/admin.c
tests_unit_test_requeue_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_test_requeue_LDADD = $(UNIT_LIBS)
tests_unit_test_requeue_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_signal_SOURCES = tests/unit/test_signal.c
tests_unit_test_signal_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_signal_LDADD = $(UNIT_LIBS)
tests_unit_test_signal_LDFLAGS = $(UNIT_LINKFLAGS)
tests_unit_test_launch_SOURCES = tests/unit/test_launch.c
tests_unit_test_launch_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_launch_LDADD = $(UNIT_LIBS)
tests_unit_test_launch_LDFLAGS = $(UNIT_LINKFLAGS)

# Every entry of the settings table, a malformed value of each.
tests_unit_test_settings_SOURCES = tests/unit/test_settings.c
tests_unit_test_settings_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_settings_LDADD = $(UNIT_LIBS)
tests_unit_test_settings_LDFLAGS = $(UNIT_LINKFLAGS)

# What the collective benchmarks check reduce-scatter and all-to-all
# against (runtime/tools/benchtable.c, plain C: no library needed).
UNIT_TESTS += tests/unit/test_benchtable
tests_unit_test_benchtable_SOURCES = tests/unit/test_benchtable.c \
	runtime/tools/benchtable.c runtime/tools/benchtable.h
tests_unit_test_benchtable_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_benchtable_LDADD = $(CMOCKA_LIBS)
tests_unit_test_benchtable_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_crc32c_SOURCES = tests/unit/test_crc32c.c
tests_unit_test_crc32c_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_crc32c_LDADD = $(UNIT_LIBS)
tests_unit_test_crc32c_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_manifest_SOURCES = tests/unit/test_manifest.c
tests_unit_test_manifest_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_manifest_LDADD = $(UNIT_LIBS)
tests_unit_test_manifest_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_catalog_SOURCES = tests/unit/test_catalog.c
tests_unit_test_catalog_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_catalog_LDADD = $(UNIT_LIBS)
tests_unit_test_catalog_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_ckpt_engine_SOURCES = tests/unit/test_ckpt_engine.c
tests_unit_test_ckpt_engine_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_ckpt_engine_LDADD = $(UNIT_LIBS)
tests_unit_test_ckpt_engine_LDFLAGS = $(UNIT_LINKFLAGS)

# Regions that move and grow, rp_ckpt_find, rp_restore_step: the engine
# in one process over a temporary checkpoint directory.
tests_unit_test_ckpt_regions_SOURCES = tests/unit/test_ckpt_regions.c
tests_unit_test_ckpt_regions_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_ckpt_regions_LDADD = $(UNIT_LIBS)
tests_unit_test_ckpt_regions_LDFLAGS = $(UNIT_LINKFLAGS)

# The GPU path's logic, without a GPU (binding, staging plan, id
# exchange, a missing module).
tests_unit_test_gpu_binding_SOURCES = tests/unit/test_gpu_binding.c
tests_unit_test_gpu_binding_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_gpu_binding_LDADD = $(UNIT_LIBS)
tests_unit_test_gpu_binding_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_gpu_path_SOURCES = tests/unit/test_gpu_path.c
tests_unit_test_gpu_path_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_gpu_path_LDADD = $(UNIT_LIBS)
tests_unit_test_gpu_path_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_subcomm_SOURCES = tests/unit/test_subcomm.c
tests_unit_test_subcomm_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_subcomm_LDADD = $(UNIT_LIBS)
tests_unit_test_subcomm_LDFLAGS = $(UNIT_LINKFLAGS)

tests_unit_test_coll_SOURCES = tests/unit/test_coll.c
tests_unit_test_coll_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_coll_LDADD = $(UNIT_LIBS)
tests_unit_test_coll_LDFLAGS = $(UNIT_LINKFLAGS)
endif

# ringpoint-ckpt against checkpoints written by the format layer (TAP).
check_PROGRAMS += tests/tools/ckpt_fixture
tests_tools_ckpt_fixture_SOURCES = tests/tools/ckpt_fixture.c
tests_tools_ckpt_fixture_LDADD = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
tests_tools_ckpt_fixture_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS) -no-install
TESTS += tests/tools/test_ckpt_tool.sh
EXTRA_DIST += tests/tools/test_ckpt_tool.sh

# A ucx.conf left in the working directory by someone else: the offline
# tools load no UCX, the library's UCX module does not read it (TAP).
TESTS += tests/tools/test_ucx_conf.sh
EXTRA_DIST += tests/tools/test_ucx_conf.sh

# One verdict about a damaged checkpoint from every ringpoint-ckpt command
# and the restore path: a byte flipped at every 512-byte offset and every
# file cut short (TAP; the commands run in-process, a few seconds).
check_PROGRAMS += tests/tools/ckpt_flip
tests_tools_ckpt_flip_SOURCES = tests/tools/ckpt_flip.c \
	runtime/tools/ckpt_cmd.c runtime/tools/ckpt_tool.h
tests_tools_ckpt_flip_LDADD = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
tests_tools_ckpt_flip_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS) -no-install
TESTS += tests/tools/ckpt_flip

# The man pages against the code: every option and site key of the plugin
# in ringpoint(8), every --help option in its tool's page (TAP).
TESTS += tests/tools/test_manpages.sh
EXTRA_DIST += tests/tools/test_manpages.sh

# The device checks on one GPU (TAP "1..0 # SKIP no CUDA device: ..." where
# there is none): ringpoint-gpu-check device with the module of this build.
TESTS += tests/tools/test_gpu_device.sh
EXTRA_DIST += tests/tools/test_gpu_device.sh

# The layering of doc/architecture.md: includes no folder may make, and
# what the library and the plugin may link (TAP).
TESTS += tests/tools/test_layers.sh
EXTRA_DIST += tests/tools/test_layers.sh

# Every relative link of README.md and doc/*.md resolves (TAP).
TESTS += tests/tools/test_doc_links.sh
EXTRA_DIST += tests/tools/test_doc_links.sh

# No two files call each other: for each pair of objects of the folders
# named in RP_NO_PAIRS_DIRS, calls go one way at most (TAP).
TESTS += tests/tools/test_no_pairs.sh
EXTRA_DIST += tests/tools/test_no_pairs.sh

# doc/scale.md's cost model refitted on doc/scale-data.csv: the held-out
# predictions within its stated tolerances, every table, the plot (TAP).
TESTS += tests/tools/test_scale_model.sh
EXTRA_DIST += tests/tools/test_scale_model.sh

# cmocka writes TAP when asked; the harness counts its results.
AM_TESTS_ENVIRONMENT = CMOCKA_MESSAGE_OUTPUT=TAP; export CMOCKA_MESSAGE_OUTPUT; \
	RP_CKPT_TOOL=$(abs_top_builddir)/runtime/tools/ringpoint-ckpt; \
	RP_CKPT_FIXTURE=$(abs_top_builddir)/tests/tools/ckpt_fixture; \
	export RP_CKPT_TOOL RP_CKPT_FIXTURE; \
	RP_GPU_CHECK=$(abs_top_builddir)/tests/slurm/ringpoint-gpu-check; \
	RP_GPU_MODULE=$(abs_top_builddir)/runtime/nccl/.libs/ringpoint-nccl.so; \
	export RP_GPU_CHECK RP_GPU_MODULE; \
	RP_LIBRINGPOINT=$(abs_top_builddir)/runtime/.libs/libringpoint.so; \
	RP_PLUGIN=$(abs_top_builddir)/spank/.libs/ringpoint.so; \
	export RP_LIBRINGPOINT RP_PLUGIN; \
	RP_NO_PAIRS_DIRS="$(abs_top_builddir)/runtime/ckpt $(abs_top_builddir)/runtime/coll $(abs_top_builddir)/runtime/bootstrap $(abs_top_builddir)/runtime/transport"; \
	export RP_NO_PAIRS_DIRS;
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/config/tap-driver.sh

EXTRA_DIST += tests/lib/harness.sh tests/lib/jobs.sh tests/slurm/test_bootstrap.sh \
	tests/slurm/test_bench.sh \
	tests/slurm/test_coll.sh tests/slurm/test_plugin.sh \
	tests/slurm/test_ckpt.sh tests/slurm/test_train.sh tests/slurm/test_preempt.sh \
	tests/slurm/test_failure.sh tests/slurm/test_chaos.sh \
	tests/slurm/test_gpu.sh tests/slurm/test_horovod_example.sh \
	tests/slurm/test_python.sh tests/slurm/test_storage.sh \
	tests/slurm/test_netns.sh tests/slurm/test_flush.sh \
	tests/slurm/test_node_faults.sh tests/slurm/test_fork.sh \
	tests/slurm/test_reinit.sh tests/slurm/test_subcomm.sh

# The collectives' correctness program, installed for the integration test
# (tests/slurm/test_coll.sh) to run under srun and mpirun.
pkglibexec_PROGRAMS = tests/slurm/ringpoint-coll-check
tests_slurm_ringpoint_coll_check_SOURCES = tests/slurm/coll_check.c \
	tests/slurm/coll_check_nb.c tests/slurm/coll_check_layout.c \
	tests/slurm/coll_check_exchange.c tests/slurm/coll_check.h
tests_slurm_ringpoint_coll_check_LDADD = runtime/libringpoint.la -lm

# Sub-communicators on a real launch (tests/slurm/test_subcomm.sh).
pkglibexec_PROGRAMS += tests/slurm/ringpoint-subcomm-check
tests_slurm_ringpoint_subcomm_check_SOURCES = tests/slurm/subcomm_check.c
tests_slurm_ringpoint_subcomm_check_LDADD = runtime/libringpoint.la

# A large collective then a wait outside the library (tests/slurm/test_flush.sh).
pkglibexec_PROGRAMS += tests/slurm/ringpoint-flush-check
tests_slurm_ringpoint_flush_check_SOURCES = tests/slurm/flush_check.c
tests_slurm_ringpoint_flush_check_LDADD = runtime/libringpoint.la

# rp_init and rp_finalize again and again in one process
# (tests/slurm/test_reinit.sh).
pkglibexec_PROGRAMS += tests/slurm/ringpoint-reinit-check
tests_slurm_ringpoint_reinit_check_SOURCES = tests/slurm/reinit_check.c
tests_slurm_ringpoint_reinit_check_LDADD = runtime/libringpoint.la

# The GPU path end to end (tests/slurm/test_gpu.sh): the NCCL id exchange
# without a GPU, device collectives and checkpoints with one. Internals:
# the bootstrap, and the module's allocator (it must not link CUDA).
pkglibexec_PROGRAMS += tests/slurm/ringpoint-gpu-check
tests_slurm_ringpoint_gpu_check_SOURCES = tests/slurm/gpu_check.c
tests_slurm_ringpoint_gpu_check_LDADD = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
tests_slurm_ringpoint_gpu_check_LDFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS)

# Children forked after rp_init (tests/slurm/test_fork.sh).
pkglibexec_PROGRAMS += tests/slurm/ringpoint-fork-check
tests_slurm_ringpoint_fork_check_SOURCES = tests/slurm/fork_check.c
tests_slurm_ringpoint_fork_check_LDADD = runtime/libringpoint.la

# rp_finalize with non-blocking collectives not waited for (test_fork.sh).
pkglibexec_PROGRAMS += tests/slurm/ringpoint-finalize-check
tests_slurm_ringpoint_finalize_check_SOURCES = tests/slurm/finalize_check.c
tests_slurm_ringpoint_finalize_check_LDADD = runtime/libringpoint.la

# The checkpoint engine's end-to-end program (tests/slurm/test_ckpt.sh).
pkglibexec_PROGRAMS += tests/slurm/ringpoint-ckpt-check
tests_slurm_ringpoint_ckpt_check_SOURCES = tests/slurm/ckpt_check.c
tests_slurm_ringpoint_ckpt_check_LDADD = runtime/libringpoint.la

# The storage tests' fault injector (tests/slurm/test_storage.sh), loaded
# with LD_PRELOAD into the ranks: fails, slows or plants a symbolic link
# at one chosen file call of the commit. Only the C library's.
faultfsdir = $(pkglibexecdir)
faultfs_LTLIBRARIES = tests/slurm/ringpoint-faultfs.la
tests_slurm_ringpoint_faultfs_la_SOURCES = tests/slurm/faultfs.c
tests_slurm_ringpoint_faultfs_la_LDFLAGS = -module -avoid-version -shared
tests_slurm_ringpoint_faultfs_la_LIBADD = -ldl
