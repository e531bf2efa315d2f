# Fuzz targets (tests/fuzz/). With --enable-fuzz (CC=clang) they are
# libFuzzer programs (scripts/fuzz.sh runs them for a time budget); in any
# other build, replay programs. Either way make check runs each over its
# committed corpus (test_fuzz.sh), with libFuzzer also a few seconds of
# new inputs.
FUZZ_TARGETS = tests/fuzz/fuzz_parse tests/fuzz/fuzz_ckpt_dir \
	tests/fuzz/fuzz_admin tests/fuzz/fuzz_shard_header \
	tests/fuzz/fuzz_manifest tests/fuzz/fuzz_manifest_build \
	tests/fuzz/fuzz_restore tests/fuzz/fuzz_settings
FUZZ_COMMON = tests/fuzz/fuzz_common.c tests/fuzz/fuzz.h
FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
FUZZ_LIBS = runtime/libringpoint_core.la $(RP_DEPS_LIBS)
# The plugin's parsers need only the dependency-free helpers, as the plugin.
FUZZ_UTIL_LIBS = runtime/libringpoint_util.la
FUZZ_LINKFLAGS = $(AM_LDFLAGS) $(RP_DEPS_LDFLAGS) -no-install
if ENABLE_FUZZ
FUZZ_CPPFLAGS += -DRP_FUZZ_LIBFUZZER
FUZZ_LINKFLAGS += -fsanitize=fuzzer
endif

check_PROGRAMS += $(FUZZ_TARGETS)
TESTS += tests/fuzz/test_fuzz.sh
EXTRA_DIST += tests/fuzz/test_fuzz.sh tests/fuzz/corpus
# scripts/valgrind.sh's suppressions (scripts/ is distributed whole).
EXTRA_DIST += tests/valgrind.supp

tests_fuzz_fuzz_parse_SOURCES = tests/fuzz/fuzz_parse.c $(FUZZ_COMMON)
tests_fuzz_fuzz_parse_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_fuzz_parse_LDADD = $(FUZZ_UTIL_LIBS)
tests_fuzz_fuzz_parse_LDFLAGS = $(FUZZ_LINKFLAGS)

tests_fuzz_fuzz_ckpt_dir_SOURCES = tests/fuzz/fuzz_ckpt_dir.c $(FUZZ_COMMON) \
	spank/ckpt_dir.c spank/admin.c
tests_fuzz_fuzz_ckpt_dir_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_fuzz_ckpt_dir_LDADD = $(FUZZ_UTIL_LIBS)
tests_fuzz_fuzz_ckpt_dir_LDFLAGS = $(FUZZ_LINKFLAGS)

# requeue_policy.c includes spank/requeue.h, which pulls in spank.h.
tests_fuzz_fuzz_admin_SOURCES = tests/fuzz/fuzz_admin.c $(FUZZ_COMMON) \
	spank/admin.c spank/requeue_policy.c
tests_fuzz_fuzz_admin_CPPFLAGS = $(FUZZ_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_fuzz_fuzz_admin_LDADD = $(FUZZ_UTIL_LIBS)
tests_fuzz_fuzz_admin_LDFLAGS = $(FUZZ_LINKFLAGS)

tests_fuzz_fuzz_shard_header_SOURCES = tests/fuzz/fuzz_shard_header.c $(FUZZ_COMMON)
tests_fuzz_fuzz_shard_header_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_fuzz_shard_header_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_shard_header_LDFLAGS = $(FUZZ_LINKFLAGS)

tests_fuzz_fuzz_manifest_SOURCES = tests/fuzz/fuzz_manifest.c $(FUZZ_COMMON)
tests_fuzz_fuzz_manifest_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_fuzz_manifest_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_manifest_LDFLAGS = $(FUZZ_LINKFLAGS)

tests_fuzz_fuzz_manifest_build_SOURCES = tests/fuzz/fuzz_manifest_build.c $(FUZZ_COMMON)
tests_fuzz_fuzz_manifest_build_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_fuzz_manifest_build_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_manifest_build_LDFLAGS = $(FUZZ_LINKFLAGS)

tests_fuzz_fuzz_restore_SOURCES = tests/fuzz/fuzz_restore.c $(FUZZ_COMMON)
tests_fuzz_fuzz_restore_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_fuzz_restore_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_restore_LDFLAGS = $(FUZZ_LINKFLAGS)

# The runtime's RINGPOINT_* reading; the settings table and the helpers only.
tests_fuzz_fuzz_settings_SOURCES = tests/fuzz/fuzz_settings.c $(FUZZ_COMMON) \
	runtime/core/settings_table.c
tests_fuzz_fuzz_settings_CPPFLAGS = $(FUZZ_CPPFLAGS) -DRP_SYSCONFDIR='"$(sysconfdir)"'
tests_fuzz_fuzz_settings_LDADD = $(FUZZ_UTIL_LIBS)
tests_fuzz_fuzz_settings_LDFLAGS = $(FUZZ_LINKFLAGS)

# spank/options.c is included by the target (its statics are reset per
# input); the SPANK calls it makes are stand-ins in the target.
if HAVE_SLURM
FUZZ_TARGETS += tests/fuzz/fuzz_options
tests_fuzz_fuzz_options_SOURCES = tests/fuzz/fuzz_options.c $(FUZZ_COMMON) \
	spank/admin.c spank/ckpt_dir.c runtime/core/settings_table.c
tests_fuzz_fuzz_options_CPPFLAGS = $(FUZZ_CPPFLAGS) $(SLURM_CPPFLAGS) \
	-DRP_SYSCONFDIR='"$(sysconfdir)"'
# clang's -Wshadow counts the callbacks' optarg parameters against getopt's.
tests_fuzz_fuzz_options_CFLAGS = $(AM_CFLAGS) -Wno-shadow
tests_fuzz_fuzz_options_LDADD = $(FUZZ_UTIL_LIBS)
tests_fuzz_fuzz_options_LDFLAGS = $(FUZZ_LINKFLAGS)
endif
EXTRA_DIST += tests/fuzz/fuzz_options.c

if ENABLE_FUZZ
AM_TESTS_ENVIRONMENT += RP_FUZZ_LIBFUZZER=1; export RP_FUZZ_LIBFUZZER;
endif
AM_TESTS_ENVIRONMENT += RP_FUZZ_TARGETS='$(FUZZ_TARGETS)'; export RP_FUZZ_TARGETS;
