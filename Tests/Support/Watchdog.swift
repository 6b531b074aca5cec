/// The `sh` script every server runs under, so that a server never outlives the test process, even one
/// killed with SIGKILL (no exit handlers run then). Foundation starts each child in a process group of
/// its own, so a Ctrl-C on the terminal does not reach the servers either: this script is what stops them.
///
/// Arguments: PARENT_PID STOP_SIGNAL PID_FILE CLEANUP_FOLDER COMMAND...
/// - starts COMMAND in the background and writes its pid to PID_FILE;
/// - exits with COMMAND's status (128 + signal when killed) once COMMAND ends, whoever ended it;
/// - on SIGTERM, or once PARENT_PID is gone (checked every second), sends STOP_SIGNAL to COMMAND,
///   SIGKILL 10 s later if it still runs, and removes CLEANUP_FOLDER (when not empty) after it ended.
enum Watchdog {
    static let script = #"""
        parent=$1 stopsig=$2 pidfile=$3 cleanup=$4
        shift 4
        "$@" &
        server=$!
        echo "$server" >"$pidfile.new" && mv "$pidfile.new" "$pidfile"
        final= killer=
        stop() {
            [ -n "$final" ] && return
            final=1
            kill -"$stopsig" "$server" 2>/dev/null
            (sleep 10; kill -KILL "$server" 2>/dev/null) &
            killer=$!
        }
        trap stop TERM
        (while kill -0 "$parent" 2>/dev/null; do sleep 1; done; kill -TERM $$) &
        guard=$!
        while :; do
            wait "$server"
            status=$?
            # wait also returns when a trap ran; the server is gone only once it was reaped.
            kill -0 "$server" 2>/dev/null || break
        done
        trap '' TERM
        kill $guard $killer 2>/dev/null
        if [ -n "$final" ] && [ -n "$cleanup" ]; then rm -rf "$cleanup"; fi
        exit "$status"
        """#
}
