# Shared build rules for C++ drivers. A driver's Makefile sets LAB (path of this folder), SRC
# (its own C++ sources), and what its library needs: PKGS (pkg-config packages), LIBS (-l flags
# of a library without a .pc file, Boost's and cpprestsdk's) and DEFS (-D flags of a header-only
# library's build, the way its users compile it); then includes this file.
#
# The protocol is the C drivers' own code (drivers/c/_lib: labdriver.c, labjob.c, labbody.c),
# compiled as C and linked in, so one implementation serves both languages; labcpp.cpp adds what
# the C++ drivers share. Objects go to the driver's own build/, so drivers can build in parallel.
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := g++
endif
CFLAGS ?= -O2 -g
CXXFLAGS ?= -O2 -g
CLAB := $(LAB)/../../c/_lib

LIB_CFLAGS := $(DEFS) $(if $(PKGS),$(shell pkg-config --cflags $(PKGS)))
LIB_LDLIBS := $(if $(PKGS),$(shell pkg-config --libs $(PKGS))) $(LIBS) -pthread
LAB_PKGS := jansson libcrypto

# the library's own plain loop (docs/driver-protocol.md §9), when the folder has one: plain.cpp
# alone, compiled with the library's flags only, none of the lab's code or headers
PLAIN := $(if $(wildcard plain.cpp),build/plain)
PLAIN_CXXFLAGS := $(CXXFLAGS) -Wall -Wextra -std=c++17 $(LIB_CFLAGS)

override CFLAGS += -Wall -Wextra -std=gnu11 -I$(CLAB) $(shell pkg-config --cflags $(LAB_PKGS))
override CXXFLAGS += -Wall -Wextra -std=c++17 -I$(LAB) -I$(CLAB) $(LIB_CFLAGS) $(shell pkg-config --cflags $(LAB_PKGS))
override LDLIBS += $(LIB_LDLIBS) $(shell pkg-config --libs $(LAB_PKGS))

C_SRC := $(CLAB)/labdriver.c $(CLAB)/labjob.c $(CLAB)/labbody.c
CXX_SRC := $(SRC) $(LAB)/labcpp.cpp
OBJ := $(patsubst %.cpp,build/%.o,$(notdir $(CXX_SRC))) $(patsubst %.c,build/%.o,$(notdir $(C_SRC)))
DEPS := $(wildcard $(LAB)/*.hpp) $(wildcard $(CLAB)/*.h) $(wildcard *.hpp)

all: build/driver $(PLAIN)

build/driver: $(OBJ)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/plain: plain.cpp | build
	$(CXX) $(PLAIN_CXXFLAGS) $(LDFLAGS) -o $@ $< $(LIB_LDLIBS)

build/%.o: %.cpp $(DEPS) | build
	$(CXX) $(CXXFLAGS) -c -o $@ $<

build/%.o: $(LAB)/%.cpp $(DEPS) | build
	$(CXX) $(CXXFLAGS) -c -o $@ $<

build/%.o: $(CLAB)/%.c $(DEPS) | build
	$(CC) $(CFLAGS) -c -o $@ $<

build:
	mkdir -p build

clean:
	rm -rf build

.PHONY: all clean
