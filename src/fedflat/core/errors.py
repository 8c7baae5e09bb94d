"""One exception type for user-facing input errors.

Raised before any compute; the CLI prints its message as a single line and exits 2.
"""


class ConfigError(ValueError):
    """Bad configuration or input file. The message names the offending key or path, on one line: a line break
    that a key or value brings in (a YAML key may hold one) is shown escaped."""

    def __init__(self, message="", *args):
        super().__init__(str(message).replace("\r", "\\r").replace("\n", "\\n"), *args)


def choice_error(key: str, value, allowed) -> ConfigError:
    allowed = ", ".join(sorted(map(str, allowed)))
    return ConfigError(f"{key}: unknown value {value!r}; allowed: {allowed}")


class OutputError(ConfigError):
    """An output could not be written (a full disk): the message names the file. A ConfigError, so every entry
    point prints it as the same single line."""
