// A listing page for load tests (internal/eval/gap/next-ab.sh), rendered
// on the server at every request as an SSR team's pages are:
//
//   /listing?cards=N   N listing cards (0..500, default 20); 60 is a
//                      CPU-bound page of about 40 KB
//   &io=MS             getServerSideProps first waits MS ms (0..5000), as
//                      for a data fetch: the async workload
import { setTimeout as sleep } from 'node:timers/promises';

const TAGS = ['wifi', 'kitchen', 'parking', 'pool'];

function intParam(value, fallback, max) {
  const n = Number.parseInt(value ?? '', 10);
  return Number.isNaN(n) ? fallback : Math.min(Math.max(n, 0), max);
}

export async function getServerSideProps({ query }) {
  const io = intParam(query.io, 0, 5000);
  const cards = intParam(query.cards, 20, 500);
  if (io > 0) await sleep(io);
  const items = Array.from({ length: cards }, (_, i) => ({
    id: i,
    title: `Listing ${i}`,
    price: 100 + ((i * 37) % 900),
    rating: ((i * 7) % 50) / 10,
    tags: TAGS.slice(0, 1 + (i % 4)),
    about: 'A quiet place near the centre, a short walk from the station, with a view of the river.',
  }));
  return { props: { items } };
}

function Card({ item }) {
  return (
    <article data-testid="listing-card">
      <h2>{item.title}</h2>
      <p>${item.price} a night</p>
      <p>{'★'.repeat(Math.round(item.rating))} {item.rating}</p>
      <ul>{item.tags.map((t) => <li key={t}>{t}</li>)}</ul>
      <p>{item.about}</p>
      <p>{item.about}</p>
    </article>
  );
}

export default function Listing({ items }) {
  return (
    <main>
      <h1>{items.length} places</h1>
      <section>{items.map((item) => <Card key={item.id} item={item} />)}</section>
    </main>
  );
}
