#!/usr/bin/env bash
# The lane's PID 1 before it is systemd: run by `unshare` as the first process of fresh pid, mount,
# net, uts, ipc and cgroup namespaces. Lays a throwaway root over the host's (the staged files on
# top), waits until the outside has wired the network, then becomes systemd.
# $1: the lane's directory (stage/ holds the files to lay on top).
set -euo pipefail
lane=$1
mount --make-rprivate /
# The overlay's writable layers live on a tmpfs: an upper directory inside the lower one is refused.
mount -t tmpfs -o mode=0755 lane "$lane/mnt"
mkdir "$lane/mnt/upper" "$lane/mnt/work" "$lane/mnt/root"
cp -a "$lane/stage/." "$lane/mnt/upper/"
root=$lane/mnt/root
mount -t overlay overlay -o "lowerdir=/,upperdir=$lane/mnt/upper,workdir=$lane/mnt/work" "$root"
mount -t proc proc "$root/proc"
# Kernel tunables read-only, but for the network's, which belong to the lane's own namespace.
mount --bind "$root/proc/sys" "$root/proc/sys"
mount --bind "$root/proc/sys/net" "$root/proc/sys/net"
mount -o remount,bind,ro "$root/proc/sys"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
mount -t tmpfs -o mode=0755,nosuid dev "$root/dev"
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<<"$node"
    mknod -m 666 "$root/dev/$name" c "$major" "$minor"
done
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
# systemd's console: its status lines land in the lane's log.
touch "$root/dev/console"
mount --bind "$lane/console.log" "$root/dev/console"
ln -s /proc/self/fd "$root/dev/fd"
hostname lane
# The outside moves the lane's end of the link in and says go.
while [ ! -e "$lane/go" ]; do sleep 0.02; done
mkdir -p "$root/.oldroot"
cd "$root"
pivot_root . .oldroot
umount -l /.oldroot
rmdir /.oldroot
exec env -i container=netobserver-lane /lib/systemd/systemd --system --unit=netobserver-lane.target </dev/console >/dev/console 2>&1
