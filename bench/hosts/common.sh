# bench/hosts/common.sh, sourced by the one-sitting scripts here with their arguments:
# ROOT (the checkout), RESULTS (the first argument or a fresh temporary folder, made, absolute)
# and BIN (where bbrun and bb-bench are: $BIN, default target/release; absolute).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RESULTS=${1:-$(mktemp -d)}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
BIN=$(cd "${BIN:-$ROOT/target/release}" && pwd)
