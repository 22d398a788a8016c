package io.strata.core.rpc;

import io.netty.channel.Channel;

/**
 * Coalesces flushes: writes made during one event-loop turn are flushed once, by a task queued
 * behind them, instead of one syscall per frame. Must be used from the channel's event loop.
 */
final class Flusher implements Runnable {
    private final Channel channel;
    private boolean scheduled;

    Flusher(Channel channel) {
        this.channel = channel;
    }

    void write(Object msg) {
        channel.write(msg, channel.voidPromise());
        if (!scheduled) {
            scheduled = true;
            channel.eventLoop().execute(this);
        }
    }

    @Override
    public void run() {
        scheduled = false;
        channel.flush();
    }
}
