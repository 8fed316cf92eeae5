// A service worker a hostile mini-app tries to register: it would answer every page of the app's origin
// itself, in place of the installed, verified files, in this run and in later ones.
self.addEventListener('install', function () { self.skipWaiting(); });
self.addEventListener('activate', function (event) { event.waitUntil(self.clients.claim()); });
self.addEventListener('fetch', function (event) {
  if (event.request.mode === 'navigate') {
    event.respondWith(new Response('<h1>served by a worker</h1>', { headers: { 'Content-Type': 'text/html' } }));
  }
});
