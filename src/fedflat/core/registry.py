"""A tiny name -> factory registry shared by datasets, models, partitioners and algorithms."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

from .errors import choice_error

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise KeyError(f"{self.kind} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        self.register(name)(obj)

    def get(self, name: str, key: str | None = None) -> T:
        if not isinstance(name, str) or name not in self._items:  # a list or mapping from a config: one line too
            raise choice_error(key or self.kind, name, self._items)
        return self._items[name]

    def names(self) -> list[str]:
        return sorted(self._items)

    def values(self) -> list[T]:
        """The registered objects in registration order (the composition root's import order)."""
        return list(self._items.values())

    def __contains__(self, name: str) -> bool:
        return name in self._items
