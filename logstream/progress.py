"""One switch for every progress bar of the process (``--no-progress``)."""

from __future__ import annotations

import os


def silence_progress_bars() -> None:
    """Turn off every progress bar from here on: ours and our libraries' (tqdm, transformers'
    weight loading and saving). tqdm reads ``TQDM_DISABLE`` only when it is first imported, and a
    bar created with ``disable=False`` ignores it, so the bars are turned off on tqdm's class."""
    os.environ["TQDM_DISABLE"] = "1"  # for child processes, and a tqdm not imported yet
    import tqdm.std
    from transformers.utils import logging as transformers_logging

    if not getattr(tqdm.std.tqdm.__init__, "silenced", False):
        shown = tqdm.std.tqdm.__init__

        def silenced(self, *args, **kwargs):
            kwargs["disable"] = True
            shown(self, *args, **kwargs)

        silenced.silenced = True
        tqdm.std.tqdm.__init__ = silenced
    transformers_logging.disable_progress_bar()
