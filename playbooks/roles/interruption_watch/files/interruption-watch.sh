#!/bin/sh
# hydra: watch the cloud's interruption notice file and act on each notice once.
#
#   interruption-watch.sh CONF
#
# CONF (written by the interruption_watch role, read again every round) sets SIGNAL (the notice file),
# HOOK (the user's interruption_hook; may be absent), DRAIN_FLAG (an execlet's drain flag, or empty),
# STATE (this watcher's directory) and INTERVAL (seconds between looks). A notice is the file with a
# status naming a preemption (instance_status or bid_status containing PREEMPT, any case) and an
# end_time. On a notice not acted on yet (by its end_time), the watcher writes DRAIN_FLAG (the execlet
# agent then takes no new work) and runs HOOK with the seconds left and the end time, as arguments and
# as HYDRA_INTERRUPTION_SECONDS_LEFT and HYDRA_INTERRUPTION_END_TIME; it logs to STATE/log, the hook's
# output to STATE/hook.log. A notice taken back (the file gone) is forgotten, and a drain it started is
# lifted. A newer copy of this script replaces the running one at the next round.
set -u
conf=$1
self=$0
. "$conf"
mkdir -p "$STATE"
: > "$STATE/started"
stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }
field() { sed -n "s/^$1:[[:space:]]*//p" "$SIGNAL" | head -n 1 | tr -d "\"'\r"; }
echo "$(stamp) watching $SIGNAL" >> "$STATE/log"
while :; do
	if [ "$self" -nt "$STATE/started" ] || [ "$conf" -nt "$STATE/started" ]; then
		exec /bin/sh "$self" "$conf"
	fi
	if [ -f "$SIGNAL" ]; then
		status=$(printf '%s %s' "$(field instance_status)" "$(field bid_status)" | tr '[:lower:]' '[:upper:]')
		end=$(field end_time)
		key=$(printf '%s' "$end" | tr -c 'A-Za-z0-9' '_')
		case $status in
		*PREEMPT*)
			if [ ! -e "$STATE/acted-$key" ]; then
				: > "$STATE/acted-$key"
				now=$(date -u +%s)
				ends=$(date -u -d "$end" +%s 2>/dev/null || echo "$now")
				left=$((ends - now))
				[ "$left" -lt 0 ] && left=0
				echo "$(stamp) notice: $status, ends $end, ${left}s left" >> "$STATE/log"
				if [ -n "$DRAIN_FLAG" ]; then
					mkdir -p "$(dirname "$DRAIN_FLAG")"
					echo "draining since $(stamp): interruption notice, the cloud ends the machine at $end" > "$DRAIN_FLAG"
					: > "$STATE/drained"
					echo "$(stamp) drain: $DRAIN_FLAG written" >> "$STATE/log"
				fi
				if [ -x "$HOOK" ]; then
					echo "$(stamp) hook: started" >> "$STATE/log"
					HYDRA_INTERRUPTION_SECONDS_LEFT=$left HYDRA_INTERRUPTION_END_TIME=$end "$HOOK" "$left" "$end" >> "$STATE/hook.log" 2>&1
					echo "$(stamp) hook: exited $?" >> "$STATE/log"
				fi
			fi
			;;
		esac
	elif ls "$STATE"/acted-* >/dev/null 2>&1; then
		rm -f "$STATE"/acted-*
		if [ -e "$STATE/drained" ] && [ -n "$DRAIN_FLAG" ]; then
			rm -f "$DRAIN_FLAG" "$STATE/drained"
		fi
		echo "$(stamp) notice taken back" >> "$STATE/log"
	fi
	sleep "$INTERVAL"
done
