package main

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// openTun creates a TUN device (IP packets, no packet-info header) named dev inside the network
// namespace at nsPath ("" = this process's own), and returns its fd. The device goes away with
// the fd, so a relay that exits leaves no device behind.
func openTun(dev, nsPath string) (int, error) {
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	// setns moves one OS thread only: do it on a locked thread of a goroutine of its own, and
	// if the thread cannot be moved back, end the goroutine locked so that Go discards the thread.
	go func() {
		runtime.LockOSThread()
		restore, err := enterNetns(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{-1, err}
			return
		}
		fd, err := createTun(dev)
		if restore() == nil {
			runtime.UnlockOSThread()
		}
		done <- result{fd, err}
	}()
	r := <-done
	return r.fd, r.err
}

func enterNetns(nsPath string) (restore func() error, err error) {
	if nsPath == "" {
		return func() error { return nil }, nil
	}
	own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("own network namespace: %w", err)
	}
	target, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(own)
		return nil, fmt.Errorf("network namespace %s: %w", nsPath, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		unix.Close(own)
		return nil, fmt.Errorf("entering network namespace %s: %w", nsPath, err)
	}
	return func() error {
		defer unix.Close(own)
		return unix.Setns(own, unix.CLONE_NEWNET)
	}, nil
}

func createTun(dev string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("/dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(dev)
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("device name %q: %w", dev, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("creating TUN device %s: %w", dev, err)
	}
	return fd, nil
}
