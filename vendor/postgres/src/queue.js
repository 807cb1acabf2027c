export default Queue

// Patched (see ../README.md): postgres.js 3.4.9 kept every slot that `shift` had taken, until a `shift` took
// the queue's last element, and `remove` searched the array from its start; while connections stay busy, or
// some stay idle, that array grows by one slot per query for as long as the process runs, and so does the time
// each query spends searching it. Here `remove` searches only the live part, and `shift` drops the taken slots
// once they are half the array.
function Queue(initial = []) {
  let xs = initial.slice()
  let index = 0

  return {
    get length() {
      return xs.length - index
    },
    // Patched (../README.md, 1): the slots the array holds, live or taken, for tests/unit_driver_test.ts.
    get capacity() {
      return xs.length
    },
    remove: (x) => {
      const at = xs.indexOf(x, index)
      return at === -1
        ? null
        : (xs.splice(at, 1), x)
    },
    push: (x) => (xs.push(x), x),
    // Patched (../README.md, 8): the oldest element, for the pool's deadline on waiting for a connection.
    peek: () => xs[index],
    shift: () => {
      const out = xs[index++]

      if (index === xs.length) {
        index = 0
        xs = []
      } else if (index >= 32 && index * 2 >= xs.length) {
        xs = xs.slice(index)
        index = 0
      } else {
        xs[index - 1] = undefined
      }

      return out
    }
  }
}
