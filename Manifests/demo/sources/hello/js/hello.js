// Asks the host for the user's name through the mini-app bridge, if there is one.
(function () {
  const greeting = document.getElementById('greeting');
  const detail = document.getElementById('detail');

  async function greet() {
    const bridge = window.MiniApp;
    if (!bridge || typeof bridge.getUserName !== 'function') {
      greeting.textContent = 'Hello, stranger!';
      detail.textContent = 'No host bridge here: open this mini-app from a host app.';
      return;
    }
    try {
      const name = await bridge.getUserName();
      greeting.textContent = 'Hello, ' + name + '!';
      detail.textContent = 'Nice to see you again.';
    } catch (error) {
      greeting.textContent = 'Hello!';
      detail.textContent = 'The host did not share your name (' + error + ').';
    }
  }

  document.getElementById('again').addEventListener('click', greet);
  greet();
})();
