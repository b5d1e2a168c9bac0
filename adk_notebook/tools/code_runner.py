"""The child's side of `PythonCodeExecutor` (code_executor.py): limits, a guard, the code, its figures.

Run as `python -I -B -u -X utf8 code_runner.py RESULT_FD SETTINGS_JSON` in the working folder,
with the code on stdin. It writes one JSON object to RESULT_FD ({"error", "figures",
"figure_errors", "files", "files_not_listed"}) and exits; what the code prints goes to its stdout and stderr
untouched. Standard library only and no import of adk_notebook: with -I it runs outside the
package, and nothing of the kernel's is loaded before the code.

Order matters. The result stream is opened and the code read before anything is limited;
then the resource limits and the alarm, then the audit hook, which cannot be removed once
installed, then the code.
"""

from __future__ import annotations

import base64
import errno
import io
import json
import linecache
import os
import re
import resource
import signal
import sys
import traceback
import types
import warnings
from typing import Any

FILENAME = "<code>"
# freed on MemoryError, so that the traceback and the result can still be made
RESERVE_BYTES = 2 << 20
_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PRIVATE_PROC = re.compile(r"/proc/(\d+)(?:/task/\d+)?/(?:environ|mem)")
_PROCESS_EVENTS = frozenset(
    {
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "subprocess.Popen",
        "os.startfile",
    }
)
# event -> positions of the path arguments and of their dir_fd (None: no dir_fd argument)
_PATH_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),),
    "os.rename": ((0, 2), (1, 3)),
    # a hard link to an outside file would let it be written
    "os.link": ((0, 2), (1, 3)),
    # where the link is made; writes through it are judged by their target
    "os.symlink": ((1, 2),),
    "os.truncate": ((0, None),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "os.chflags": ((0, None),),
    "os.lchflags": ((0, None),),
    "os.setxattr": ((0, None),),
    "os.removexattr": ((0, None),),
    # sqlite writes its files in C, past the "open" event
    "sqlite3.connect": ((0, None),),
    # an AF_UNIX address is a file
    "socket.bind": ((1, None),),
}


class Guard:
    """An audit hook that refuses writes outside `root`, new processes and signals to others.

    A refused operation raises PermissionError in the code, as the operating system would.
    """

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.pid = os.getpid()
        self.written: set[str] = set()
        # real path -> the matplotlib figure savefig wrote there
        self.saved: dict[str, Any] = {}

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, _mode, flags = args
            if isinstance(path, int):  # os.fdopen of a descriptor already open
                return
            if flags & _WRITE_FLAGS:
                real = self._writable(path, None)
                self.written.add(real)
                figure = _saving_figure()
                if figure is not None:
                    self.saved[real] = figure
            else:
                self._readable(path)
        elif event in _PATH_EVENTS:
            for index, dir_fd_index in _PATH_EVENTS[event]:
                dir_fd = args[dir_fd_index] if dir_fd_index is not None else None
                self.written.add(self._writable(args[index], dir_fd))
        elif event in _PROCESS_EVENTS:
            raise PermissionError(errno.EPERM, f"code run by run_python may not start processes ({event})")
        elif event in ("os.kill", "os.killpg"):
            target = args[0]
            own = (0, self.pid) if event == "os.kill" else (0, os.getpgrp())
            if target not in own:
                raise PermissionError(
                    errno.EPERM,
                    f"code run by run_python may not signal other processes ({event})",
                )

    def _writable(self, path: Any, dir_fd: int | None) -> str:
        """The real path `path` names, if it lies inside the folder; PermissionError if not."""
        if not isinstance(path, str | bytes | os.PathLike | int):
            return self.root  # a network socket's address: no file
        # an in-memory sqlite3 database, an abstract unix socket: no file either
        if isinstance(path, str | bytes) and (path in ("", ":memory:") or path[:1] in ("\0", b"\0")):
            return self.root
        real = _resolve(path, dir_fd)
        if real == os.devnull or real == self.root or real.startswith(self.root + os.sep):
            return real
        raise PermissionError(
            errno.EACCES,
            f"code run by run_python may only write inside its working folder {self.root}",
            str(path),
        )

    def _readable(self, path: Any) -> None:
        match = _PRIVATE_PROC.fullmatch(_resolve(path, None))
        if match and int(match.group(1)) != self.pid:
            raise PermissionError(
                errno.EACCES,
                "code run by run_python may not read another process's environment or memory",
                path,
            )

    def files(self, most: int) -> tuple[list[str], int]:
        """What the code wrote or changed that is still a file, relative to the folder, hidden ones left out.

        The first `most` names, sorted, and how many more there are.
        """
        names = {os.path.relpath(p, self.root) for p in self.written if p != self.root and os.path.isfile(p)}
        shown = sorted(n for n in names if not n.startswith("."))
        return shown[:most], max(0, len(shown) - most)


def _saving_figure() -> Any:
    """The figure whose `savefig` is opening a file right now, if any (a frame up the stack)."""
    # two frames up, above the hook: whoever opened the file
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "savefig" else None
        if type(owner).__name__ == "Figure":
            return owner
        frame = frame.f_back
    return None


def _resolve(path: Any, dir_fd: int | None) -> str:
    if isinstance(path, int):  # an open descriptor: the file it refers to
        return os.path.realpath(f"/proc/self/fd/{path}")
    text = os.fsdecode(os.fspath(path))
    if text.startswith("file:"):  # sqlite3 URI filenames
        text = text[5:].split("?", 1)[0]
    if dir_fd is not None and dir_fd >= 0 and not os.path.isabs(text):
        text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
    return os.path.realpath(text)


def apply_limits(settings: dict[str, Any]) -> None:
    """Memory, file size, no core files, and an alarm that ends the process should the parent vanish."""
    memory = settings.get("memory_bytes")
    if memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    file_size = settings["file_size_bytes"]
    # Python ignores SIGXFSZ: a write past the limit fails with OSError
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # SIGALRM's default action ends the process, whatever holds the GIL
    signal.alarm(settings["alarm_seconds"])


def run(code: str) -> str | None:
    """Run `code` as a script's __main__; None, or the error as a traceback of the code's frames.

    The code gets a `__main__` module of its own (not this runner), so that what it defines
    pickles and its dataclasses resolve as in any script.
    """
    linecache.cache[FILENAME] = (
        len(code),
        None,
        code.splitlines(keepends=True),
        FILENAME,
    )
    main = types.ModuleType("__main__")
    main.__file__ = FILENAME
    sys.modules["__main__"] = main
    reserve = bytearray(RESERVE_BYTES)
    try:
        exec(compile(code, FILENAME, "exec"), main.__dict__)  # noqa: S102 - running the code is this process's job
        return None
    except SystemExit as exc:
        return None if exc.code in (None, 0) else f"SystemExit: {exc.code}"
    except BaseException as exc:  # noqa: BLE001 - whatever the code raised is its result
        del reserve  # room to format the traceback in, should memory be what ran out
        return _traceback(exc)
    finally:
        main.__dict__.clear()  # the code's data goes before its figures are drawn


def _traceback(error: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename != __file__]
    lines = traceback.format_exception_only(type(error), error)
    if frames:
        lines = [
            "Traceback (most recent call last):\n",
            *traceback.format_list(frames),
            *lines,
        ]
    return "".join(lines).rstrip("\n")


def figures(saved: dict[str, Any]) -> tuple[list[dict[str, str]], list[str]]:
    """Each figure once: the image file the code saved it to, else (still open) drawn as PNG.

    Returns the images ({"mime_type", "data": base64}) and the errors of figures that could not be drawn.
    """
    images: list[dict[str, str]] = []
    shown: set[int] = set()
    for path, figure in saved.items():
        mime_type = _IMAGE_TYPES.get(os.path.splitext(path)[1].lower())
        if mime_type is not None and os.path.isfile(path):
            with open(path, "rb") as file:
                images.append({"mime_type": mime_type, "data": _base64(file.read())})
            shown.add(id(figure))
    pyplot: Any = sys.modules.get("matplotlib.pyplot")
    errors: list[str] = []
    for number in pyplot.get_fignums() if pyplot is not None else []:
        figure = pyplot.figure(number)
        if id(figure) in shown:
            continue
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png")
        except Exception as exc:  # noqa: BLE001 - reported beside the figures that could be drawn
            errors.append(f"figure {number}: {type(exc).__name__}: {exc}")
            continue
        images.append({"mime_type": "image/png", "data": _base64(buffer.getvalue())})
    return images, errors


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def main(argv: list[str]) -> None:
    result = os.fdopen(int(argv[1]), "w", encoding="utf-8")
    settings = json.loads(argv[2])
    code = sys.stdin.read()
    apply_limits(settings)
    guard = Guard(os.getcwd())
    # modules the code wrote in its folder can be imported
    sys.path.insert(0, guard.root)
    # plt.show() under Agg: nothing to show, nothing to warn about
    warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")
    sys.addaudithook(guard)
    error = run(code)
    images, figure_errors = figures(guard.saved)
    files, not_listed = guard.files(settings["max_listed_files"])
    json.dump(
        {
            "error": error,
            "figures": images,
            "figure_errors": figure_errors,
            "files": files,
            "files_not_listed": not_listed,
        },
        result,
    )
    result.close()


if __name__ == "__main__":
    main(sys.argv)
