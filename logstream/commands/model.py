"""``logstream model list|rollback [VERSION]``: the model versions continual fine-tuning made.

Every adapted model is kept in the store (``adapt.store_dir``, default ``<worker.data_dir>/models``);
the worker serves the one the store points at and follows the pointer within
``adapt.check_interval_s``. ``rollback`` without a version goes back to the model the current one
was made from (the base model, ``model.path``, at last).
"""

from __future__ import annotations


def add_arguments(p):
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="the versions, the one served marked with *")
    rollback = sub.add_parser("rollback", help="serve an earlier version (default: the current one's parent)")
    rollback.add_argument("version", nargs="?", help="a version from `logstream model list`, or 'base'")


def run(args, settings) -> int:
    from ..adapt.store import BASE

    store = settings.model_store()
    if args.action == "rollback":
        version = store.rollback(args.version)
        print(f"{store.root}: now serving {version} ({store.path_of(version)}); running workers follow within "
              f"{settings.adapt.check_interval_s:g} s")
        return 0
    current = store.current_version()
    print(f"model store {store.root}")
    print(f"{'*' if current == BASE else ' '} {BASE:<28} {store.base}")
    for record in store.history():
        if record["reason"] == "rollback":
            continue
        mark = "*" if record["version"] == current else " "
        print(f"{mark} {record['version']:<28} {record['time']}  from {record['previous']}: {record['reason']}")
    return 0
