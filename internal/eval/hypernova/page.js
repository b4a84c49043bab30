'use strict';
// The page the Hypernova worker renders (a copy of examples/react-ssr/page.js
// without its streamed variant): a search-results listing of stays, built from
// nested React components without JSX (h is React.createElement), so the
// worker needs no build step.
//
// The data is generated from a seeded PRNG, so a given page always renders
// the same HTML, and the render costs about what a real listing page does:
// up to 200 cards, each a dozen components deep.

const React = require('react');

const h = React.createElement;

// PAGE_SIZE is how many listing cards one page shows.
const PAGE_SIZE = 200;

// mulberry32 is a small deterministic PRNG: same seed, same page.
function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CITIES = ['Lisbon', 'Kyoto', 'Oaxaca', 'Cape Town', 'Reykjavik', 'Hanoi', 'Tbilisi', 'Valparaíso', 'Porto', 'Chengdu'];
const KINDS = ['Loft', 'Cabin', 'Townhouse', 'Studio', 'Farmhouse', 'Treehouse', 'Houseboat', 'Villa', 'Apartment', 'Yurt'];
const ADJECTIVES = ['Sunny', 'Quiet', 'Historic', 'Modern', 'Cosy', 'Airy', 'Hidden', 'Riverside', 'Hilltop', 'Garden'];
const AMENITIES = ['Wifi', 'Kitchen', 'Washer', 'Free parking', 'Air conditioning', 'Workspace', 'Pool', 'Hot tub', 'EV charger', 'Fireplace', 'Crib', 'Gym'];
const HOSTS = ['Ana', 'Kenji', 'Lucía', 'Thabo', 'Sigrún', 'Minh', 'Nino', 'Tomás', 'Inês', 'Wei'];
const FILTERS = [
  { id: 'type', title: 'Type of place', options: ['Entire place', 'Private room', 'Shared room'] },
  { id: 'price', title: 'Price range', options: ['Under €50', '€50–€100', '€100–€200', '€200+'] },
  { id: 'amenities', title: 'Amenities', options: AMENITIES },
  { id: 'booking', title: 'Booking options', options: ['Instant Book', 'Self check-in', 'Free cancellation'] },
];

function pick(rand, list) {
  return list[Math.floor(rand() * list.length)];
}

// listings returns the data of one page of results: PAGE_SIZE cards, or
// the first size of them (a lighter page, for an async workload whose render
// is short beside its data fetch).
function listings(page, size = PAGE_SIZE) {
  const rand = mulberry32(page * 7919 + 17);
  const items = [];
  for (let i = 0; i < Math.min(size, PAGE_SIZE); i++) {
    const id = (page - 1) * PAGE_SIZE + i + 1;
    const amenities = AMENITIES.filter(() => rand() < 0.4);
    items.push({
      id,
      title: `${pick(rand, ADJECTIVES)} ${pick(rand, KINDS)} in ${pick(rand, CITIES)}`,
      photos: Array.from({ length: 5 }, (_, k) => `/img/listing-${id}-${k + 1}`),
      description: `${pick(rand, ADJECTIVES)} ${pick(rand, KINDS).toLowerCase()} ${Math.ceil(rand() * 30)} minutes from the centre of ${pick(rand, CITIES)}. ` +
        `${pick(rand, ADJECTIVES)} views, ${pick(rand, AMENITIES).toLowerCase()} and a ${pick(rand, ADJECTIVES).toLowerCase()} neighbourhood.`,
      from: 1 + Math.floor(rand() * 27),
      nights: 2 + Math.floor(rand() * 6),
      price: 40 + Math.floor(rand() * 360),
      rating: Math.round((3.5 + rand() * 1.5) * 100) / 100,
      reviews: Math.floor(rand() * 900),
      superhost: rand() < 0.25,
      guestFavourite: rand() < 0.15,
      host: { name: pick(rand, HOSTS), years: 1 + Math.floor(rand() * 12) },
      beds: 1 + Math.floor(rand() * 5),
      amenities,
    });
  }
  return { page, total: 50 * PAGE_SIZE, items };
}

function Header({ query }) {
  return h('header', { className: 'site-header' },
    h('a', { className: 'logo', href: '/' }, 'stays'),
    h(SearchBar, { query }),
    h('nav', { className: 'user-nav' },
      ['Become a host', 'Help', 'Log in'].map((label) => h('a', { key: label, href: '#' + label.toLowerCase().replace(/ /g, '-') }, label))));
}

function SearchBar({ query }) {
  return h('form', { className: 'search', action: '/', method: 'get', role: 'search' },
    h('label', { htmlFor: 'q' }, 'Where'),
    h('input', { id: 'q', name: 'q', defaultValue: query, placeholder: 'Search destinations' }),
    h('label', { htmlFor: 'guests' }, 'Guests'),
    h('input', { id: 'guests', name: 'guests', type: 'number', min: 1, defaultValue: 2 }),
    h('button', { type: 'submit' }, 'Search'));
}

function FilterGroup({ group }) {
  return h('fieldset', { className: 'filter-group' },
    h('legend', null, group.title),
    h('ul', null, group.options.map((option, i) => h('li', { key: option },
      h('label', null,
        h('input', { type: 'checkbox', name: group.id, value: String(i) }),
        ' ', option)))));
}

function Sidebar() {
  return h('aside', { className: 'filters' },
    h('h2', null, 'Filters'),
    FILTERS.map((group) => h(FilterGroup, { key: group.id, group })));
}

function Stars({ rating }) {
  const full = Math.round(rating);
  const stars = [];
  for (let i = 1; i <= 5; i++) {
    stars.push(h('span', { key: i, className: i <= full ? 'star full' : 'star' }, i <= full ? '★' : '☆'));
  }
  return h('span', { className: 'stars', 'aria-label': `${rating} out of 5` }, stars);
}

function Badges({ listing }) {
  const badges = [];
  if (listing.superhost) badges.push('Superhost');
  if (listing.guestFavourite) badges.push('Guest favourite');
  if (badges.length === 0) return null;
  return h('ul', { className: 'badges' }, badges.map((b) => h('li', { key: b, className: 'badge' }, b)));
}

function Host({ host }) {
  return h('div', { className: 'host' },
    h('span', { className: 'avatar', 'aria-hidden': true }, host.name[0]),
    h('span', null, `Hosted by ${host.name} · ${host.years} ${host.years === 1 ? 'year' : 'years'} hosting`));
}

function Amenities({ list }) {
  if (list.length === 0) return null;
  return h('ul', { className: 'amenities' }, list.map((a) => h('li', { key: a }, a)));
}

function Price({ price, nights }) {
  return h('p', { className: 'price' },
    h('strong', null, `€${price}`), ' night',
    h('span', { className: 'total' }, ` · €${price * nights} total`));
}

function Photos({ listing }) {
  return h('div', { className: 'carousel' },
    h('ul', { className: 'slides' }, listing.photos.map((src, i) => h('li', { key: src },
      h('a', { href: `/rooms/${listing.id}?photo=${i + 1}` },
        h('img', {
          src: `${src}.jpg`,
          srcSet: `${src}-480.webp 480w, ${src}-960.webp 960w, ${src}-1440.webp 1440w`,
          sizes: '(max-width: 600px) 100vw, 300px',
          alt: `${listing.title}, photo ${i + 1} of ${listing.photos.length}`,
          width: 300,
          height: 200,
          loading: i === 0 ? 'eager' : 'lazy',
        }))))),
    h('ol', { className: 'dots', 'aria-hidden': true }, listing.photos.map((src, i) => h('li', { key: src, className: i === 0 ? 'dot active' : 'dot' }))),
    h('button', { type: 'button', className: 'wishlist', 'aria-label': `Save ${listing.title} to a wishlist` }, '♡'));
}

function Availability({ listing }) {
  const to = listing.from + listing.nights;
  return h('p', { className: 'availability' },
    h('time', { dateTime: `2026-12-${String(listing.from).padStart(2, '0')}` }, `Dec ${listing.from}`),
    ' – ',
    h('time', { dateTime: `2026-12-${String(to).padStart(2, '0')}` }, `Dec ${to}`),
    ` · ${listing.nights} nights`);
}

function ListingCard({ listing }) {
  return h('article', { className: 'listing-card', 'data-testid': 'listing-card', 'data-id': listing.id },
    h(Photos, { listing }),
    h(Badges, { listing }),
    h('h3', null, h('a', { href: `/rooms/${listing.id}` }, listing.title)),
    h('p', { className: 'meta' }, `${listing.beds} ${listing.beds === 1 ? 'bed' : 'beds'}`),
    h('p', { className: 'description' }, listing.description),
    h(Availability, { listing }),
    h('p', { className: 'rating' }, h(Stars, { rating: listing.rating }), ` ${listing.rating.toFixed(2)} (${listing.reviews})`),
    h(Price, { price: listing.price, nights: listing.nights }),
    h(Host, { host: listing.host }),
    h(Amenities, { list: listing.amenities }));
}

function Pagination({ page, pages }) {
  const links = [];
  for (let p = Math.max(1, page - 3); p <= Math.min(pages, page + 3); p++) {
    links.push(h('li', { key: p }, p === page
      ? h('span', { 'aria-current': 'page' }, p)
      : h('a', { href: `/?page=${p}` }, p)));
  }
  return h('nav', { className: 'pagination', 'aria-label': 'Pages' }, h('ol', null, links));
}

function Footer() {
  return h('footer', { className: 'site-footer' },
    h('p', null, 'Rendered on the server with React ', React.version, ' by Hypernova.'));
}

// ListingPage is the whole page body.
function ListingPage({ data, query }) {
  const pages = Math.ceil(data.total / PAGE_SIZE);
  return h('div', { className: 'app', 'data-testid': 'listing-page' },
    h(Header, { query }),
    h('div', { className: 'layout' },
      h(Sidebar),
      h('main', { id: 'listings' },
        h('h1', null, query ? `Stays matching “${query}”` : 'Stays everywhere'),
        h('p', { className: 'summary' }, `${data.total} stays · page ${data.page} of ${pages}`),
        h('section', { className: 'grid' }, data.items.map((listing) => h(ListingCard, { key: listing.id, listing }))),
        h(Pagination, { page: data.page, pages }))),
    h(Footer));
}

// Page is the component Hypernova's jobs name ("Page"): its props, the
// job's data, say which page of results and how many cards, so that a job
// stays a few bytes and the render is the page's.
function Page({ page, items }) {
  return h(ListingPage, { data: listings(page, items), query: '' });
}

module.exports = { PAGE_SIZE, listings, ListingPage, Page };
