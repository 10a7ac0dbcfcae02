import net from 'node:net';
import type { ISocketFactory } from 'kafkajs';

/** Kafka's Produce request has API key 0: bytes 4–5 of a request (after its int32 size). */
const PRODUCE_API_KEY = 0;

/**
 * A kafkajs socket factory that can lose the broker's answers to Produce requests: while `dropProduceAnswers` is
 * set, a connection that wrote a Produce request is destroyed when the answer arrives, before kafkajs reads it.
 * The broker has written the batch; the client sees a broken connection. That is what a broker stopping (or a
 * network cut) between writing a batch and answering does.
 */
export function lossyProduceSockets(): { socketFactory: ISocketFactory; dropProduceAnswers: boolean; dropped: number } {
  const state = {
    dropProduceAnswers: false,
    dropped: 0,
    socketFactory: (({ host, port, onConnect }) => {
      const socket = net.connect({ host, port }, onConnect);
      let produceWritten = false;
      const write = socket.write.bind(socket) as (...a: unknown[]) => boolean;
      socket.write = ((chunk: unknown, ...rest: unknown[]) => {
        if (Buffer.isBuffer(chunk) && chunk.length >= 6 && chunk.readInt16BE(4) === PRODUCE_API_KEY) produceWritten = true;
        return write(chunk, ...rest);
      }) as typeof socket.write;
      const emit = socket.emit.bind(socket) as (event: string | symbol, ...a: unknown[]) => boolean;
      socket.emit = ((event: string | symbol, ...args: unknown[]) => {
        if (event === 'data' && produceWritten && state.dropProduceAnswers) {
          state.dropped++;
          socket.destroy(new Error('test: the answer to a Produce request was lost'));
          return true;
        }
        return emit(event, ...args);
      }) as typeof socket.emit;
      return socket;
    }) as ISocketFactory,
  };
  return state;
}
