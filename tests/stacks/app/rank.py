"""One fake rank: sets its title like SGLang, then blocks (or works) in a named function."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scheduler
import setproctitle

if __name__ == "__main__":
    rank, behaviour = int(sys.argv[1]), sys.argv[2]
    title = os.environ.get("TITLE")
    if title:
        setproctitle.setproctitle(title.format(rank=rank))
    scheduler.run_scheduler_process(rank, behaviour)
