# Man pages, each generated at build time from its one source,
# doc/man/NAME.SECTION.in, and from what the code says (doc/man/mkman.sh):
# the tools' SYNOPSIS and OPTIONS from their --help, libringpoint(3)'s
# function list from the public headers' Doxygen briefs and its
# ENVIRONMENT from the runtime's settings table. Not distributed:
# the tarball carries the sources and the generator, and every build makes
# the pages again. tests/tools/test_manpages.sh checks them against the code.
RP_MAN_TOOLS = doc/man/ringpoint-ckpt.1 doc/man/ringpoint-bench.1 \
	doc/man/ringpoint-info.1 doc/man/ringpoint-example-train.1
man_MANS = $(RP_MAN_TOOLS) doc/man/libringpoint.3
if HAVE_SLURM
man_MANS += doc/man/ringpoint.8
endif
CLEANFILES += $(RP_MAN_TOOLS) doc/man/libringpoint.3 doc/man/ringpoint.8

RP_MKMAN = AWK='$(AWK)' $(SHELL) $(srcdir)/doc/man/mkman.sh \
	-D VERSION='$(PACKAGE_VERSION)' -D SLURM_PLUGINDIR='$(SLURM_PLUGINDIR)' \
	-D PKGDATADIR='$(pkgdatadir)' -D SYSCONFDIR='$(sysconfdir)'
RP_MKMAN_DEPS = $(srcdir)/doc/man/mkman.sh Makefile
# In the order a reader meets them.
RP_MAN_HDRS = $(srcdir)/include/ringpoint/context.h \
	$(srcdir)/include/ringpoint/coll.h $(srcdir)/include/ringpoint/ckpt.h \
	$(srcdir)/include/ringpoint/cuda.h $(srcdir)/include/ringpoint/status.h \
	$(srcdir)/include/ringpoint/types.h \
	$(srcdir)/include/ringpoint/subcomm.h

doc/man/ringpoint.8: $(srcdir)/doc/man/ringpoint.8.in $(RP_MKMAN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) doc/man && \
	$(RP_MKMAN) $(srcdir)/doc/man/ringpoint.8.in >$@.tmp && mv $@.tmp $@

# Its ENVIRONMENT from the runtime's settings table, as the built
# ringpoint-info prints it (runtime/core/settings_table.c).
doc/man/libringpoint.3: runtime/tools/ringpoint-info$(EXEEXT) \
		$(srcdir)/doc/man/libringpoint.3.in \
		$(RP_MAN_HDRS) $(RP_MKMAN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) doc/man && \
	$< --settings-table >$@.env && \
	$(RP_MKMAN) `for h in $(RP_MAN_HDRS); do echo "-A $$h"; done` \
	    -E $@.env $(srcdir)/doc/man/libringpoint.3.in >$@.tmp && \
	rm -f $@.env && mv $@.tmp $@

# Each tool page from the built tool's --help (the first prerequisite).
RP_MAN_FROM_HELP = $(MKDIR_P) doc/man && $< --help >$@.help && \
	$(RP_MKMAN) -H $@.help $(srcdir)/$@.in >$@.tmp && \
	rm -f $@.help && mv $@.tmp $@
doc/man/ringpoint-ckpt.1: runtime/tools/ringpoint-ckpt$(EXEEXT) \
		$(srcdir)/doc/man/ringpoint-ckpt.1.in $(RP_MKMAN_DEPS)
	$(AM_V_GEN)$(RP_MAN_FROM_HELP)
doc/man/ringpoint-bench.1: runtime/tools/ringpoint-bench$(EXEEXT) \
		$(srcdir)/doc/man/ringpoint-bench.1.in $(RP_MKMAN_DEPS)
	$(AM_V_GEN)$(RP_MAN_FROM_HELP)
doc/man/ringpoint-info.1: runtime/tools/ringpoint-info$(EXEEXT) \
		$(srcdir)/doc/man/ringpoint-info.1.in $(RP_MKMAN_DEPS)
	$(AM_V_GEN)$(RP_MAN_FROM_HELP)
doc/man/ringpoint-example-train.1: \
		contrib/examples/ringpoint-example-train$(EXEEXT) \
		$(srcdir)/doc/man/ringpoint-example-train.1.in $(RP_MKMAN_DEPS)
	$(AM_V_GEN)$(RP_MAN_FROM_HELP)
