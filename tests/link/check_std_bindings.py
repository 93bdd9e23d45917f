#!/usr/bin/env python3
"""Fails when a libstdc++ symbol used by one of our binaries resolves anywhere but in libstdc++.

Usage: check_std_bindings.py --ours DIR [--env NAME=VALUE ...] [--expect-violations TORCH_LIB_DIR]
                             -- CMD ARGS [-- CMD ARGS ...]

Each command runs with LD_BIND_NOW=1 (every reference bound at load time, not only the ones a run
happens to call) and LD_DEBUG=bindings; the dynamic linker's report says, for every reference, which
file's definition it took. A reference from a file under DIR (our executables, tests and the Python
module) is wrong when it carries a libstdc++ symbol version (GLIBCXX_*, CXXABI_*) or names a symbol
that libstdc++ exports, and binds to a library that is neither libstdc++ nor one of ours (a binary's
own weak copy of an inline template is fine): a pip or conda libtorch exports unversioned
copies of what it links statically, and calls into them crashed (pytorch/pytorch#133437).
Against Debian's LibTorch this passes trivially; on a pip PyTorch it is the check that matters.

--expect-violations TORCH_LIB_DIR turns the check round, for a probe linked without the fix: exits 0
when it finds libstdc++ symbols of ours bound outside libstdc++ (printing them), 77 (skipped) when it
finds none and the LibTorch in TORCH_LIB_DIR exports no libstdc++ symbol either (Debian's: nothing to
show), and 1 when it finds none although that LibTorch exports such symbols.
"""
import os
import re
import subprocess
import sys
import tempfile

BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: \w+ symbol `([^']+)'(?: \[([^\]]+)\])?")


def libstdcxx_exports(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def find_libstdcxx():
    out = subprocess.run(["g++", "-print-file-name=libstdc++.so.6"], capture_output=True, text=True).stdout.strip()
    return os.path.realpath(out) if out and os.path.exists(out) else None


def main(argv):
    ours, env_extra, commands, cur, expect_in = None, {}, [], None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if cur is None and a == "--ours":
            ours, i = os.path.realpath(argv[i + 1]), i + 2
            continue
        if cur is None and a == "--expect-violations":
            expect_in, i = argv[i + 1], i + 2
            continue
        if cur is None and a == "--env":
            k, v = argv[i + 1].split("=", 1)
            env_extra[k], i = v, i + 2
            continue
        if a == "--":
            cur = []
            commands.append(cur)
        else:
            cur.append(a)
        i += 1
    commands = [c for c in commands if c]
    if not ours or not commands:
        print(__doc__, file=sys.stderr)
        return 2
    lib = find_libstdcxx()
    exported = libstdcxx_exports(lib) if lib else set()
    bad, checked = [], 0
    for cmd in commands:
        with tempfile.TemporaryDirectory(prefix="gwb-bindings-") as tmp:
            env = dict(os.environ, LD_BIND_NOW="1", LD_DEBUG="bindings", LD_DEBUG_OUTPUT=os.path.join(tmp, "ld"))
            env.update(env_extra)
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stderr[-2000:]}", file=sys.stderr)
                return 1
            for name in os.listdir(tmp):
                with open(os.path.join(tmp, name), errors="replace") as f:
                    for line in f:
                        m = BINDING.search(line)
                        if not m:
                            continue
                        src, dst, sym, ver = m.groups()
                        if not os.path.realpath(src).startswith(ours + os.sep):
                            continue
                        checked += 1
                        libstdcxx_symbol = (ver or "").startswith(("GLIBCXX_", "CXXABI_")) or sym in exported
                        # Our own copy of an inline template (a weak definition in the same binary) is
                        # fine; a definition in someone else's library is what crashed.
                        own = os.path.realpath(dst).startswith(ours + os.sep)
                        if libstdcxx_symbol and not own and not os.path.basename(dst).startswith("libstdc++"):
                            bad.append(f"{os.path.basename(src)}: {sym} [{ver or 'no version'}] -> {dst}")
    if expect_in is not None:
        return expected_violations(bad, checked, exported, expect_in)
    if bad:
        print(f"{len(bad)} libstdc++ symbols of ours resolve outside libstdc++:", file=sys.stderr)
        for b in sorted(set(bad))[:40]:
            print("  " + b, file=sys.stderr)
        return 1
    if checked == 0:
        print("no binding of ours was reported: LD_DEBUG did not run", file=sys.stderr)
        return 1
    print(f"{checked} bindings of our binaries checked over {len(commands)} commands: every libstdc++ symbol "
          f"resolves into {lib}")
    return 0


def expected_violations(bad, checked, exported, torch_lib_dir):
    """--expect-violations: the probe without the fix must be caught where the LibTorch exports copies."""
    copies = {}
    for name in sorted(os.listdir(torch_lib_dir)):
        if name.startswith(("libtorch", "libc10")) and ".so" in name and not os.path.islink(os.path.join(torch_lib_dir, name)):
            out = subprocess.run(["nm", "-D", "--defined-only", os.path.join(torch_lib_dir, name)],
                                 capture_output=True, text=True).stdout
            # The fault is about copies of libstdc++'s compiled code (std::filesystem: what crashed);
            # a few inline template instances that every C++ library exports do not count.
            n = sum(1 for line in out.splitlines() if line.split() and line.split()[-1].split("@")[0] in exported
                    and "St10filesystem" in line.split()[-1])
            if n:
                copies[name] = n
    said = ", ".join(f"{k} {v}" for k, v in copies.items()) or "none"
    print(f"libstdc++ symbols exported by the LibTorch in {torch_lib_dir}: {said}")
    if bad:
        print(f"as expected without the fix, {len(set(bad))} libstdc++ symbols of the probe bind outside libstdc++ "
              f"({checked} bindings read), for example:")
        for b in sorted(set(bad))[:12]:
            print("  " + b)
        return 0
    if not copies:
        print("this LibTorch exports no libstdc++ symbol, so the unfixed probe binds correctly: nothing to show")
        return 77
    print(f"the unfixed probe bound every libstdc++ symbol into libstdc++ ({checked} bindings read) although "
          "this LibTorch exports copies: the check would not catch the fault", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
