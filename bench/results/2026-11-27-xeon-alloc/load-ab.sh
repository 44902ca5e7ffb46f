#!/bin/bash
# load-ab.sh BIN FILE [extra server flags...]: the load of ../2026-11-27-xeon/load-ab.sh (which also prints peak RSS).
exec bash "$(dirname "$0")/../2026-11-27-xeon/load-ab.sh" "$@"
