package io.strata.core.rpc;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import java.util.Locale;

/** The Netty socket transport: native epoll or io_uring on Linux when they load, NIO otherwise. */
public enum Transport {
    NIO, EPOLL, IO_URING;

    /** {@code auto} prefers epoll (io_uring is often restricted in containers), then NIO. */
    public static Transport resolve(String name) {
        return switch (name.toLowerCase(Locale.ROOT).replace('-', '_')) {
            case "auto" -> Epoll.isAvailable() ? EPOLL : NIO;
            case "nio" -> NIO;
            case "epoll" -> require(EPOLL);
            case "io_uring", "iouring" -> require(IO_URING);
            default -> throw new IllegalArgumentException(
                    "unknown transport '" + name + "' (expected auto, nio, epoll or io_uring)");
        };
    }

    private static Transport require(Transport t) {
        if (!t.available()) {
            Throwable why = t == EPOLL ? Epoll.unavailabilityCause() : IoUring.unavailabilityCause();
            throw new IllegalArgumentException("transport " + t.name().toLowerCase(Locale.ROOT)
                    + " is not available here: " + (why == null ? "unknown reason" : why.getMessage()));
        }
        return t;
    }

    public boolean available() {
        return switch (this) {
            case NIO -> true;
            case EPOLL -> Epoll.isAvailable();
            case IO_URING -> IoUring.isAvailable();
        };
    }

    public IoHandlerFactory ioHandlerFactory() {
        return switch (this) {
            case NIO -> NioIoHandler.newFactory();
            case EPOLL -> EpollIoHandler.newFactory();
            case IO_URING -> IoUringIoHandler.newFactory();
        };
    }

    public Class<? extends SocketChannel> socketChannel() {
        return switch (this) {
            case NIO -> NioSocketChannel.class;
            case EPOLL -> EpollSocketChannel.class;
            case IO_URING -> IoUringSocketChannel.class;
        };
    }

    public Class<? extends ServerChannel> serverChannel() {
        return switch (this) {
            case NIO -> NioServerSocketChannel.class;
            case EPOLL -> EpollServerSocketChannel.class;
            case IO_URING -> IoUringServerSocketChannel.class;
        };
    }
}
