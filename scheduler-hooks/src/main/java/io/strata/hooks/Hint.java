package io.strata.hooks;

import java.util.List;
import java.util.Map;

/**
 * A scheduler's hint and its progress, as the cluster manager keeps it (JSON, written by the
 * hooks server only) and the API shows it. Times are milliseconds since the epoch (0: none).
 *
 * @param id           the cluster manager's id for it
 * @param job          the scheduler's job it is for (ending the job releases what its hints pinned)
 * @param paths        files, directories (everything under them) and globs, absolute
 * @param deadline     when the job wants to start
 * @param priority     0..9, higher first; hints of one priority go earliest deadline first
 * @param nodes        the job's compute nodes (names, hosts or agent ids); empty: any agent
 * @param qos          the QoS class the agents fetch in
 * @param supersedes   a hint this one replaced (cancelled at submission), 0 for none
 * @param state        {@link HintState#text()}
 * @param message      why it failed, or what it waits for; "" otherwise
 * @param files        files the paths expand to
 * @param bytesTotal   bytes of the chunks to stage
 * @param bytesDone    bytes staged so far (fetched or found in L2)
 * @param eta          when it should be ready, at the recent rate (0: not known yet)
 * @param readyAt      when it became ready
 * @param perNode      progress per agent node
 */
public record Hint(long id, String job, List<String> paths, long deadline, int priority, List<String> nodes, String qos,
                   long supersedes, String state, String message, long files, long bytesTotal, long bytesDone, long eta,
                   long created, long updated, long readyAt, Map<String, NodeProgress> perNode) {
    public Hint {
        paths = List.copyOf(paths);
        nodes = List.copyOf(nodes);
        perNode = Map.copyOf(perNode);
        message = message == null ? "" : message;
    }

    /** Bytes staged and to stage on one agent's node. */
    public record NodeProgress(long bytesTotal, long bytesDone) {
    }

    public HintState stateValue() {
        return HintState.parse(state);
    }

    public Hint withId(long i) {
        return new Hint(i, job, paths, deadline, priority, nodes, qos, supersedes, state, message, files, bytesTotal, bytesDone, eta,
                created, updated, readyAt, perNode);
    }

    public Hint withState(HintState s, String why, long now) {
        return new Hint(id, job, paths, deadline, priority, nodes, qos, supersedes, s.text(), why, files, bytesTotal, bytesDone, eta,
                created, now, s == HintState.READY && readyAt == 0 ? now : readyAt, perNode);
    }

    public Hint withProgress(long f, long total, long done, long etaAt, Map<String, NodeProgress> per, long now) {
        return new Hint(id, job, paths, deadline, priority, nodes, qos, supersedes, state, message, f, total, done, etaAt, created, now,
                readyAt, per);
    }
}
