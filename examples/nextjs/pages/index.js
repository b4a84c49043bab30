// Rendered on the server at every request: getServerSideProps makes the
// page dynamic, as an SSR team's pages are.
export async function getServerSideProps() {
  return { props: { pid: process.pid } };
}

export default function Home({ pid }) {
  return <main data-testid="next-page">rendered by worker pid {pid}</main>;
}
