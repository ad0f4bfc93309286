/**
 * A reader that stops early (`cornserve tasks | head`) closes our stdout: the next write fails with EPIPE, which Node
 * raises as an 'error' event and, with no listener, a crash with a stack trace. For every command the output is then
 * simply not wanted: the command ends as it would have, and nothing is printed about it. Other stream errors still
 * surface.
 */
export function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}
