#!/bin/sh
# A stand-in for a vendor kernel compiler (MetaX mxcc, Moore mcc) in
# tests/test_platform_host_compiler.py: appends its command line to
# $FAKE_VENDOR_LOG (one invocation per line), then runs g++ (compiling its
# sources as C++, whatever their extension).
printf '%s\n' "$*" >> "${FAKE_VENDOR_LOG:?FAKE_VENDOR_LOG is not set}"
for arg in "$@"; do
  if [ "$arg" = "-c" ]; then
    exec g++ -x c++ "$@"
  fi
done
exec g++ "$@"
