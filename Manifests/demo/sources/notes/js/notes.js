// Keeps a note in local storage and offers it as a download.
(function () {
  const text = document.getElementById('text');
  const state = document.getElementById('state');
  text.value = localStorage.getItem('note') || '';
  text.addEventListener('input', function () {
    localStorage.setItem('note', text.value);
    state.textContent = 'saved locally';
  });
  document.getElementById('save').addEventListener('click', function () {
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([text.value], { type: 'text/plain' }));
    link.download = 'note.txt';
    link.click();
  });
})();
