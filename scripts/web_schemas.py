"""Write the schemas the front end is built with, from the engine's own classes:
web/src/run/events.schema.json (scellis.train.events) and
web/src/run/options.schema.json (scellis.run.options, the tab's defaults).
A test fails while the committed files differ from what this writes."""

from pathlib import Path

from scellis.run.options import schema_text as options_schema
from scellis.train.events import schema_text as events_schema

RUN = Path(__file__).resolve().parents[1] / "web" / "src" / "run"

if __name__ == "__main__":
    (RUN / "events.schema.json").write_text(events_schema())
    (RUN / "options.schema.json").write_text(options_schema())
