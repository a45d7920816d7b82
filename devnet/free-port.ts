import { createServer } from 'node:net'

/**
 * A TCP port nothing listens on right now, on 127.0.0.1: the OS picks it, and
 * it is released before use (a tiny race accepted for a server started
 * right after). For the services tests and benches start in processes of
 * their own, which cannot listen on port 0 and report back.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
