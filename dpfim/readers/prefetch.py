"""Reading one chunk ahead in a thread, for the paths whose parsing releases the GIL (the
compiled FIMI tokeniser, pyarrow's CSV parser): reading and decompressing then overlap parsing
and both cores work."""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator

ENABLED = True  # off: the caller's thread reads (for measurements)


def prefetched(
    items: Iterator[tuple[bytes, int]], ahead_of_time: bool = True
) -> Generator[tuple[bytes, int], None, None]:
    """The same chunks, read one ahead in a thread (when ahead_of_time): reading and
    decompressing overlap the parsing. Errors are raised here, in order. Close it (contextlib.
    closing) before the stream it reads is closed: that stops and joins the thread."""
    if not (ENABLED and ahead_of_time):
        yield from items
        return
    ahead: queue.Queue[tuple[tuple[bytes, int] | None, BaseException | None]] = queue.Queue(1)
    stop = threading.Event()

    def run() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        ahead.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ahead.put((None, None))
        except BaseException as exc:  # handed to the reading thread, raised there
            ahead.put((None, exc))

    worker = threading.Thread(target=run, name="dpfim-read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            item, exc = ahead.get()
            if exc is not None:
                raise exc
            if item is None:
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # let it finish before the stream is closed
            try:
                ahead.get_nowait()
            except queue.Empty:
                worker.join(0.05)
