"""The bounded YAML loader's fast path (see `yaml_loader.py`): a document of plain data — mappings with
scalar keys, sequences, strings, numbers, booleans, nulls and dates, no anchor, alias or tag — built
straight from the parser's events, without composing a node graph or walking it.

It builds only what it has already proved safe, and declines (returns `DECLINED`, its partial work
dropped) at the first event that could make anything else: an anchor or an alias (the bounded path
counts their expansion), any tag (the bounded path checks it against the safe ones), a merge key, a
mapping or sequence as a key, a second document, nesting near `MAX_DEPTH`, a scalar that does not
build (a bad date, a 5,000-digit integer) or a document the parser refuses. The bounded path then
reads the document again and reports what it finds, with its line and key, as it always did: this
path changes how fast a plain file loads, never what any file loads to or which error it gets.

Without aliases a document's values are its written ones, so what is built is linear in the text.
Building is the safe constructor's for every scalar that is not a string, called on that scalar alone.
"""

from __future__ import annotations

from typing import Any, Final

import yaml

from .loaders import MAX_DEPTH

DECLINED: Final = object()

_STR: Final = "tag:yaml.org,2002:str"
# Plain scalars the safe constructor builds into values of their own: anything else a plain scalar
# resolves to (a merge key `<<`, the `=` value tag, the `!`/`&`/`*` yaml tag) is declined.
_BUILT: Final = frozenset(
    "tag:yaml.org,2002:" + name for name in ("null", "bool", "int", "float", "timestamp")
)
# Events told by their class's name, as `expansion` tells them: libyaml's extension keeps the event
# classes it first imported (see `yaml_loader._C_NODES`).
_SCALAR, _SEQUENCE, _MAPPING, _END, _DOCUMENT, _DOCUMENT_END, _STREAM, _STREAM_END = range(8)
_KINDS: Final = {
    "ScalarEvent": _SCALAR,
    "SequenceStartEvent": _SEQUENCE,
    "MappingStartEvent": _MAPPING,
    "SequenceEndEvent": _END,
    "MappingEndEvent": _END,
    "DocumentStartEvent": _DOCUMENT,
    "DocumentEndEvent": _DOCUMENT_END,
    "StreamStartEvent": _STREAM,
    "StreamEndEvent": _STREAM_END,
}  # an AliasEvent is not here: it declines
_NO_KEY: Final = object()
# Deep enough for any real file, short of the bounded path's own bound so that it judges a deep one.
_DEEPEST: Final = MAX_DEPTH - 2


def build_plain(loader: Any) -> Any:
    """The single document `loader` (a safe loader on the text, not yet read) parses, built from its
    events; `DECLINED` when the document is not plain data (see the module's docstring)."""
    try:
        return _build(loader)
    except yaml.YAMLError:
        return DECLINED  # the bounded path parses it again and names the line


def _build(loader: Any) -> Any:
    get_event = loader.get_event
    resolve = loader.resolve
    # The safe constructor's builders of the five scalar tags, and only those.
    builders = {tag: loader.yaml_constructors[tag] for tag in _BUILT}
    scalar_node = yaml.nodes.ScalarNode
    kinds: dict[type, int] = {}
    tags: dict[str, str] = {}  # a plain scalar's text -> the tag it resolves to: keys repeat a lot
    stack: list[tuple[Any, bool, Any]] = []  # the open collections' (container, is a mapping, key)
    root: list[Any] = []
    top: Any = root  # the innermost open collection, a list or a dict
    in_mapping = False
    key: Any = _NO_KEY  # in a mapping: the key read whose value comes next
    documents = 0
    while True:
        event = get_event()
        cls = type(event)
        kind = kinds.get(cls)
        if kind is None:
            kind = kinds[cls] = _KINDS.get(cls.__name__, -1)
        if kind == _SCALAR:
            if event.anchor is not None or event.tag is not None:
                return DECLINED
            value = event.value
            if event.implicit[0]:  # plain: its text says what it is (`12`, `true`, `2026-02-01`, `~`)
                tag = tags.get(value)
                if tag is None:
                    tag = tags[value] = resolve(scalar_node, value, (True, False))
                if tag != _STR:
                    build = builders.get(tag)
                    if build is None:
                        return DECLINED
                    try:
                        value = build(loader, scalar_node(tag, value))
                    except Exception:  # the bounded path builds it again and names the line and key
                        return DECLINED
        elif kind in (_SEQUENCE, _MAPPING):
            if event.anchor is not None or event.tag is not None:
                return DECLINED
            if (in_mapping and key is _NO_KEY) or len(stack) >= _DEEPEST:
                return DECLINED  # a collection as a key, or deep: the bounded path judges both
            stack.append((top, in_mapping, key))
            top, in_mapping, key = ({}, True, _NO_KEY) if kind == _MAPPING else ([], False, _NO_KEY)
            continue
        elif kind == _END:
            value = top
            top, in_mapping, key = stack.pop()
        elif kind == _DOCUMENT:
            documents += 1
            if documents > 1:
                return DECLINED  # more than one document: the bounded path says so
            continue
        elif kind == _STREAM_END:
            return root[0] if root else None
        elif kind in (_DOCUMENT_END, _STREAM):
            continue
        else:
            return DECLINED  # an alias
        if in_mapping:
            if key is _NO_KEY:
                key = value
            else:
                top[key] = value
                key = _NO_KEY
        else:
            top.append(value)
