# Shared build rules for C drivers. A driver's Makefile sets LAB (path of this folder),
# SRC (its own sources) and PKGS (pkg-config packages besides jansson and libcrypto), then
# includes this file. Objects go to the driver's own build/, so drivers can build in parallel.
ifeq ($(origin CC),default)
CC := gcc
endif
CFLAGS ?= -O2 -g
# the library's own plain loop (docs/driver-protocol.md §9), when the folder has one: plain.c
# alone, compiled with the library's flags only (PKGS), none of the lab's code or headers
PLAIN := $(if $(wildcard plain.c),build/plain)
PLAIN_CFLAGS := $(CFLAGS) -Wall -Wextra -std=gnu11 $(if $(PKGS),$(shell pkg-config --cflags $(PKGS)))
PLAIN_LDLIBS := $(if $(PKGS),$(shell pkg-config --libs $(PKGS)))
override CFLAGS += -Wall -Wextra -std=gnu11 -I$(LAB)
ALL_PKGS := jansson libcrypto $(PKGS)
override CFLAGS += $(shell pkg-config --cflags $(ALL_PKGS))
override LDLIBS += $(shell pkg-config --libs $(ALL_PKGS))

LAB_SRC := $(LAB)/labdriver.c $(LAB)/labjob.c $(LAB)/labbody.c
OBJ := $(patsubst %.c,build/%.o,$(notdir $(SRC) $(LAB_SRC)))
DEPS := $(wildcard $(LAB)/*.h) $(wildcard *.h)

all: build/driver $(PLAIN)

build/driver: $(OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/plain: plain.c | build
	$(CC) $(PLAIN_CFLAGS) $(LDFLAGS) -o $@ $< $(PLAIN_LDLIBS)

build/%.o: %.c $(DEPS) | build
	$(CC) $(CFLAGS) -c -o $@ $<

build/%.o: $(LAB)/%.c $(DEPS) | build
	$(CC) $(CFLAGS) -c -o $@ $<

build:
	mkdir -p build

clean:
	rm -rf build

.PHONY: all clean
