// Shows a made-up forecast for the position the host shares (no network calls).
(function () {
  const reading = document.getElementById('reading');
  const where = document.getElementById('where');

  function forecast(latitude, longitude) {
    const seed = Math.abs(Math.sin(latitude * 12.9898 + longitude * 78.233)) * 43758.5453;
    return Math.round(((seed % 1) * 35) - 5);
  }

  if (!navigator.geolocation) {
    where.textContent = 'This host does not share locations.';
    return;
  }
  navigator.geolocation.getCurrentPosition(function (position) {
    const { latitude, longitude } = position.coords;
    reading.textContent = forecast(latitude, longitude) + ' °C';
    where.textContent = 'Near ' + latitude.toFixed(2) + ', ' + longitude.toFixed(2);
  }, function (error) {
    where.textContent = 'No location: ' + error.message;
  });
})();
