"""Running the onset CLI: where its binary is, and what a failed run says."""

import os
import shutil
import subprocess


class OnsetCommandError(RuntimeError):
    """An onset command exited non-zero (docs/cli.md: 1 could not be done, 2 bad input)."""

    def __init__(self, argv, returncode, stderr):
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        message = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        command = " ".join([os.path.basename(self.argv[0])] + self.argv[1:])
        super().__init__(f"{command} exited {returncode}: {message}")


def find_onset(onset_bin=None):
    """The onset binary: `onset_bin`, else $ONSET_BIN, else `onset` on PATH."""
    candidate = onset_bin or os.environ.get("ONSET_BIN") or shutil.which("onset")
    if not candidate:
        raise FileNotFoundError("no onset binary: pass onset_bin=, set ONSET_BIN, or put "
                                "build/bin on PATH")
    if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
        raise FileNotFoundError(f"{candidate}: not an executable onset binary")
    return candidate


def flag_arguments(flags):
    """{name: value} as CLI flags: `by_x=v` -> `--by-x v`, a list joined with commas, True a
    bare flag, False and None left out."""
    argv = []
    for name, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            argv += [flag, ",".join(str(v) for v in value)]
        else:
            argv += [flag, str(value)]
    return argv


def run_onset(binary, argv, env=None):
    """Runs `binary argv...` and returns its stdout; OnsetCommandError when it fails."""
    result = subprocess.run([binary] + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise OnsetCommandError([binary] + list(argv), result.returncode, result.stderr)
    return result.stdout
